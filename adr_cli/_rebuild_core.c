/* adr rebuild's native batch core (adr_cli/_rebuild_native.py drives it; docs/native.md).
 *
 * The same work as the pure path, for a whole consume() batch at a time, without a Python object
 * per event: decode the common kill event (msgpack map of exactly v, id, arena, attacker, victim,
 * ts; ASCII ids; anything else goes back to the Python decoder, which gives the consumer's
 * reasons), merge the partitions by event time (adr_cli/_rebuild_log.read_log), apply the
 * rebuild's per-partition lateness and the counting rules (redis_layout/event_ids.CountingRules)
 * and rate counted events with ADR exactly as engine.RatingBook does (engine/_book.py, _kill.py,
 * _store.py, _pairs.py, _snapshot.py): the same IEEE-754 double operations in the same order,
 * the same libm calls (exp, atan, sqrt), math.fsum's algorithm, the exact integer σ-sum and its
 * correctly rounded division. Built with -ffp-contract=off and without -ffast-math (setup.py).
 * The pure engine is the reference; tests/consumer/test_rebuild_native.py checks identity.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_ID 64
#define MAX_MESSAGE 4096
#define NO_TS (-(INT64_C(1) << 62))
#define MS_PER_DAY 86400000.0
#define MAX_TS_MS ((INT64_C(1) << 53) - 1)
#define DUE_BUCKET_MS 10000
#define TIERS 15
#define NB 14 /* boundaries */
#define MIN_SWEEP_MS 1000
#define RUNS_PER_HORIZON 32

typedef __int128 i128;

/* ---------------------------------------------------------------- Python's min, max, // -- */
static inline double pmin(double a, double b) { return b < a ? b : a; }
static inline double pmax(double a, double b) { return b > a ? b : a; }
static inline int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static inline int64_t due_bucket_end(int64_t ts) {
    return (floordiv(ts, DUE_BUCKET_MS) + 1) * DUE_BUCKET_MS - 1;
}

/* math.fsum (CPython's msum with its final half-even fix-up); the values are finite. */
static double fsum(const double *v, size_t count) {
    double stack[64], *p = stack, *heap_p = NULL;
    size_t n = 0, cap = 64;
    double x, y, t, hi, yr, lo = 0.0;
    for (size_t k = 0; k < count; k++) {
        x = v[k];
        size_t i = 0;
        for (size_t j = 0; j < n; j++) {
            y = p[j];
            if (fabs(x) < fabs(y)) { t = x; x = y; y = t; }
            hi = x + y;
            yr = hi - x;
            lo = y - yr;
            if (lo != 0.0) p[i++] = lo;
            x = hi;
        }
        n = i;
        if (x != 0.0) {
            if (n >= cap) {
                double *grown = malloc(2 * cap * sizeof(double));
                if (grown == NULL) abort();
                memcpy(grown, p, n * sizeof(double));
                free(heap_p);
                p = heap_p = grown;
                cap *= 2;
            }
            p[n++] = x;
        }
    }
    hi = 0.0;
    if (n > 0) {
        hi = p[--n];
        while (n > 0) {
            x = hi;
            y = p[--n];
            hi = x + y;
            yr = hi - x;
            lo = y - yr;
            if (lo != 0.0) break;
        }
        if (n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0))) {
            y = lo * 2.0;
            x = hi + y;
            yr = x - hi;
            if (y == yr) hi = x;
        }
    }
    free(heap_p);
    return hi;
}

static int bitlen(unsigned __int128 x) {
    uint64_t high = (uint64_t)(x >> 64), low = (uint64_t)x;
    if (high) return 128 - __builtin_clzll(high);
    return low ? 64 - __builtin_clzll(low) : 0;
}

/* Python's int / int for num >= 0, den > 0: correctly rounded, ties to even. */
static double int_truediv(unsigned __int128 num, unsigned __int128 den) {
    if (num == 0) return 0.0;
    int shift = 66 - (bitlen(num) - bitlen(den)); /* the quotient gets 65 to 67 bits */
    unsigned __int128 q;
    int sticky;
    if (shift >= 0) {
        unsigned __int128 shifted = num << shift; /* num < 2**100, den < 2**96 here: no overflow */
        q = shifted / den;
        sticky = (shifted % den) != 0;
    } else {
        unsigned __int128 q0 = num / den;
        sticky = (num % den) != 0;
        unsigned __int128 lost = q0 & ((((unsigned __int128)1) << -shift) - 1);
        sticky |= lost != 0;
        q = q0 >> -shift;
    }
    int drop = bitlen(q) - 53;
    uint64_t mant;
    if (drop > 0) {
        unsigned __int128 rem = q & ((((unsigned __int128)1) << drop) - 1);
        unsigned __int128 half = ((unsigned __int128)1) << (drop - 1);
        mant = (uint64_t)(q >> drop);
        if (rem > half || (rem == half && (sticky || (mant & 1)))) mant++;
    } else {
        mant = (uint64_t)q; /* sticky cannot matter: never fewer than 65 bits */
        drop = 0;
    }
    return ldexp((double)mant, drop - shift);
}

/* ------------------------------------------------------------------------- parameters -- */
typedef struct {
    double mu0, mu_min, mu_max, sigma0, sigma_min, sigma_max, gamma, sigma_peak, eta_min, eta_max;
    double rho_s, rho_v, w_ref, gamma_phi, lambda_phi, c_loss, theta, lambda_sigma, tau;
    double sigma_drift, t_return, alpha, lambda_pool, nu_min, nu_max, delta_max, sigma_place;
    double h_req, beta, bound_return_decay, zero_sum_update, floor_margin, decay_grace;
    double logistic_link, own_sigma, sigma_scale;
    int64_t s_max, n_min, n_active, p_min, window, cooldown_ms, repeat_window_ms, pair_memory_ms;
    int64_t active_ms, sigma_k;
    int64_t q_num[NB], q_den[NB];
} Params;

/* --------------------------------------------------------------- interned names (str) -- */
typedef struct {
    char *bytes;
    size_t used, cap;
    size_t *off;      /* name i: bytes[off[i] .. off[i] + len[i]) */
    uint8_t *len;
    int32_t *player;  /* the store number once tracked, else -1 */
    size_t count, ncap;
    uint32_t *slots;  /* open addressing: name + 1, 0 empty */
    size_t mask;
} Names;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (uint8_t)s[i]; h *= 1099511628211ULL; }
    return h ^ (h >> 29);
}

static int names_grow(Names *t) {
    size_t size = (t->mask + 1) * 2;
    uint32_t *slots = calloc(size, sizeof(uint32_t));
    if (!slots) return -1;
    for (size_t i = 0; i < t->count; i++) {
        size_t h = hash_bytes(t->bytes + t->off[i], t->len[i]) & (size - 1);
        while (slots[h]) h = (h + 1) & (size - 1);
        slots[h] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    return 0;
}

/* The name's number (interning it), or -1 when out of memory. */
static int64_t names_intern(Names *t, const char *s, size_t n) {
    size_t h = hash_bytes(s, n) & t->mask;
    uint32_t slot;
    while ((slot = t->slots[h])) {
        size_t i = slot - 1;
        if (t->len[i] == n && memcmp(t->bytes + t->off[i], s, n) == 0) return (int64_t)i;
        h = (h + 1) & t->mask;
    }
    if (t->count >= t->ncap) {
        size_t cap = t->ncap ? t->ncap * 2 : 1024;
        size_t *off = realloc(t->off, cap * sizeof(size_t));
        if (!off) return -1;
        t->off = off;
        uint8_t *len = realloc(t->len, cap);
        if (!len) return -1;
        t->len = len;
        int32_t *player = realloc(t->player, cap * sizeof(int32_t));
        if (!player) return -1;
        t->player = player;
        t->ncap = cap;
    }
    if (t->used + n > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 65536;
        while (cap < t->used + n) cap *= 2;
        char *bytes = realloc(t->bytes, cap);
        if (!bytes) return -1;
        t->bytes = bytes;
        t->cap = cap;
    }
    size_t i = t->count++;
    memcpy(t->bytes + t->used, s, n);
    t->off[i] = t->used;
    t->len[i] = (uint8_t)n;
    t->player[i] = -1;
    t->used += n;
    t->slots[h] = (uint32_t)i + 1;
    if (t->count * 2 > t->mask + 1 && names_grow(t) < 0) return -1;
    return (int64_t)i;
}

static PyObject *names_str(Names *t, int64_t i) {
    return PyUnicode_DecodeUTF8(t->bytes + t->off[i], t->len[i], "strict");
}

/* ------------------------------------------------- an insertion-ordered u64 -> i64 map -- */
typedef struct {
    uint64_t *keys;
    int64_t *vals;
    size_t count, cap;
    int32_t *slots; /* position + 1 */
    size_t mask;
} OMap;

static inline size_t hash_u64(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return (size_t)k;
}

static int omap_init(OMap *m) {
    memset(m, 0, sizeof(*m));
    m->mask = 1023;
    m->slots = calloc(1024, sizeof(int32_t));
    return m->slots ? 0 : -1;
}

static void omap_free(OMap *m) { free(m->keys); free(m->vals); free(m->slots); }

static int64_t *omap_get(OMap *m, uint64_t key) {
    size_t h = hash_u64(key) & m->mask;
    int32_t s;
    while ((s = m->slots[h])) {
        if (m->keys[s - 1] == key) return &m->vals[s - 1];
        h = (h + 1) & m->mask;
    }
    return NULL;
}

static int omap_put(OMap *m, uint64_t key, int64_t val) {
    size_t h = hash_u64(key) & m->mask;
    int32_t s;
    while ((s = m->slots[h])) {
        if (m->keys[s - 1] == key) { m->vals[s - 1] = val; return 0; }
        h = (h + 1) & m->mask;
    }
    if (m->count >= m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        uint64_t *keys = realloc(m->keys, cap * sizeof(uint64_t));
        if (!keys) return -1;
        m->keys = keys;
        int64_t *vals = realloc(m->vals, cap * sizeof(int64_t));
        if (!vals) return -1;
        m->vals = vals;
        m->cap = cap;
    }
    m->keys[m->count] = key;
    m->vals[m->count] = val;
    m->slots[h] = (int32_t)++m->count;
    if (m->count * 2 > m->mask + 1) {
        size_t size = (m->mask + 1) * 2;
        int32_t *slots = calloc(size, sizeof(int32_t));
        if (!slots) return -1;
        for (size_t i = 0; i < m->count; i++) {
            size_t g = hash_u64(m->keys[i]) & (size - 1);
            while (slots[g]) g = (g + 1) & (size - 1);
            slots[g] = (int32_t)i + 1;
        }
        free(m->slots);
        m->slots = slots;
        m->mask = size - 1;
    }
    return 0;
}

static void omap_clear(OMap *m) {
    m->count = 0;
    memset(m->slots, 0, (m->mask + 1) * sizeof(int32_t));
}

/* ---------------------------------------------------- the a->b pair table (_pairs.py) -- */
typedef struct {
    uint64_t *keys;
    int64_t *stamps;
    size_t n;
    int64_t newest;
} Run;

typedef struct {
    int64_t cooldown, sweep_every, swept_at;
    int swept;
    OMap a, b; /* the two dicts: `fresh` is new, the other old */
    OMap *fresh, *old;
    Run *runs;
    size_t run_head, run_count, run_cap; /* runs[run_head .. run_head + run_count) */
} Pairs;

static int cmp_u64_pos(const void *x, const void *y, void *keys_) {
    const uint64_t *keys = keys_;
    uint64_t a = keys[*(const size_t *)x], b = keys[*(const size_t *)y];
    return (a > b) - (a < b);
}

static const uint64_t *sort_keys;
static int cmp_pos(const void *x, const void *y) { return cmp_u64_pos(x, y, (void *)sort_keys); }

static int pairs_sweep(Pairs *t, int64_t watermark, int64_t horizon) {
    OMap *old = t->old;
    if (old->count) {
        size_t n = old->count;
        size_t *order = malloc(n * sizeof(size_t));
        Run run;
        run.keys = malloc(n * sizeof(uint64_t));
        run.stamps = malloc(n * sizeof(int64_t));
        if (!order || !run.keys || !run.stamps) return -1;
        for (size_t i = 0; i < n; i++) order[i] = i;
        sort_keys = old->keys;
        qsort(order, n, sizeof(size_t), cmp_pos);
        run.n = n;
        run.newest = INT64_MIN;
        for (size_t i = 0; i < n; i++) {
            run.keys[i] = old->keys[order[i]];
            run.stamps[i] = old->vals[order[i]];
            if (run.stamps[i] > run.newest) run.newest = run.stamps[i];
        }
        free(order);
        if (t->run_head + t->run_count >= t->run_cap) {
            if (t->run_head > 0) {
                memmove(t->runs, t->runs + t->run_head, t->run_count * sizeof(Run));
                t->run_head = 0;
            }
            if (t->run_count >= t->run_cap) {
                size_t cap = t->run_cap ? t->run_cap * 2 : 64;
                Run *runs = realloc(t->runs, cap * sizeof(Run));
                if (!runs) return -1;
                t->runs = runs;
                t->run_cap = cap;
            }
        }
        t->runs[t->run_head + t->run_count++] = run;
    }
    omap_clear(old);
    t->old = t->fresh;
    t->fresh = old;
    while (t->run_count && t->runs[t->run_head].newest <= horizon) {
        free(t->runs[t->run_head].keys);
        free(t->runs[t->run_head].stamps);
        t->run_head++;
        t->run_count--;
    }
    t->swept_at = watermark;
    return 0;
}

/* The last counted a->b time an event at ts is checked against; 0 when none (*found = 0). */
static int64_t pairs_last(Pairs *t, uint64_t key, int64_t ts, int64_t watermark, int *found) {
    int64_t *v = omap_get(t->fresh, key);
    if (!v) v = omap_get(t->old, key);
    if (v) { *found = 1; return *v; }
    *found = 0;
    if (ts >= watermark - t->cooldown) return 0;
    for (size_t r = t->run_count; r-- > 0;) {
        Run *run = &t->runs[t->run_head + r];
        size_t lo = 0, hi = run->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (run->keys[mid] < key) lo = mid + 1; else hi = mid;
        }
        if (lo < run->n && run->keys[lo] == key) { *found = 1; return run->stamps[lo]; }
    }
    return 0;
}

static int pairs_put(Pairs *t, uint64_t key, int64_t ts, int64_t watermark, int64_t horizon) {
    if (omap_put(t->fresh, key, ts) < 0) return -1;
    if (!t->swept) {
        t->swept = 1;
        t->swept_at = watermark;
    } else if (watermark - t->swept_at >= t->sweep_every) {
        return pairs_sweep(t, watermark, horizon);
    }
    return 0;
}

/* ------------------------------------------------------ the event ids (event_ids.py) -- */
typedef struct {
    char id[MAX_ID];
    uint8_t len;
    uint32_t arena, attacker, victim; /* name numbers */
    int64_t ts;
    int32_t prev, next; /* insertion order (a dict's), -1 at the ends */
} Eid;

typedef struct {
    int64_t due;
    int32_t entry;
} Due;

typedef struct {
    Eid *e;
    size_t count, cap;
    int32_t free_head, first, last;
    uint64_t *slots; /* 32 bits of the id's hash << 32 | entry + 1; linear probing with
                        backward-shift deletion; the hash spares a visit to most entries */
    size_t mask, live;
    Due *heap;
    size_t heap_n, heap_cap;
    int64_t keep_ms;
} Eids;

static int eids_find_slot(Eids *t, const char *id, size_t n, size_t *slot) {
    uint32_t tag = (uint32_t)hash_bytes(id, n);
    size_t h = tag & t->mask;
    uint64_t s;
    while ((s = t->slots[h])) {
        if ((uint32_t)(s >> 32) == tag) {
            Eid *e = &t->e[(uint32_t)s - 1];
            if (e->len == n && memcmp(e->id, id, n) == 0) { *slot = h; return 1; }
        }
        h = (h + 1) & t->mask;
    }
    *slot = h;
    return 0;
}

static inline int32_t eids_entry(uint64_t s) { return (int32_t)(uint32_t)s - 1; }

static void due_push(Eids *t, Due d) {
    size_t i = t->heap_n++;
    Due *h = t->heap;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h[parent].due <= d.due) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = d;
}

static Due due_pop(Eids *t) {
    Due *h = t->heap, top = h[0], last = h[--t->heap_n];
    size_t i = 0, n = t->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1].due < h[c].due) c++;
        if (last.due <= h[c].due) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

static void eids_delete(Eids *t, int32_t entry) {
    Eid *e = &t->e[entry];
    size_t slot;
    eids_find_slot(t, e->id, e->len, &slot);
    /* backward-shift deletion */
    size_t i = slot, j = slot;
    t->slots[i] = 0;
    for (;;) {
        j = (j + 1) & t->mask;
        uint64_t s = t->slots[j];
        if (!s) break;
        size_t k = (uint32_t)(s >> 32) & t->mask;
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            t->slots[i] = s;
            t->slots[j] = 0;
            i = j;
        }
    }
    if (e->prev >= 0) t->e[e->prev].next = e->next; else t->first = e->next;
    if (e->next >= 0) t->e[e->next].prev = e->prev; else t->last = e->prev;
    e->next = t->free_head;
    t->free_head = entry;
    t->live--;
}

static void eids_forget(Eids *t, int has_watermark, int64_t watermark) {
    if (!has_watermark) return;
    int64_t horizon = watermark - t->keep_ms;
    while (t->heap_n && t->heap[0].due <= horizon) eids_delete(t, due_pop(t).entry);
}

static int eids_remember(Eids *t, const char *id, size_t n, uint32_t arena, uint32_t attacker,
                         uint32_t victim, int64_t ts) {
    if ((t->live + 1) * 2 > t->mask + 1) {
        size_t size = (t->mask + 1) * 2;
        uint64_t *slots = calloc(size, sizeof(uint64_t));
        if (!slots) return -1;
        for (int32_t x = t->first; x >= 0; x = t->e[x].next) {
            uint32_t tag = (uint32_t)hash_bytes(t->e[x].id, t->e[x].len);
            size_t h = tag & (size - 1);
            while (slots[h]) h = (h + 1) & (size - 1);
            slots[h] = ((uint64_t)tag << 32) | (uint32_t)(x + 1);
        }
        free(t->slots);
        t->slots = slots;
        t->mask = size - 1;
    }
    int32_t entry;
    if (t->free_head >= 0) {
        entry = t->free_head;
        t->free_head = t->e[entry].next;
    } else {
        if (t->count >= t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 4096;
            Eid *e = realloc(t->e, cap * sizeof(Eid));
            if (!e) return -1;
            t->e = e;
            t->cap = cap;
        }
        entry = (int32_t)t->count++;
    }
    if (t->heap_n >= t->heap_cap) {
        size_t cap = t->heap_cap ? t->heap_cap * 2 : 4096;
        Due *heap = realloc(t->heap, cap * sizeof(Due));
        if (!heap) return -1;
        t->heap = heap;
        t->heap_cap = cap;
    }
    Eid *e = &t->e[entry];
    memcpy(e->id, id, n);
    e->len = (uint8_t)n;
    e->arena = arena;
    e->attacker = attacker;
    e->victim = victim;
    e->ts = ts;
    e->prev = t->last;
    e->next = -1;
    if (t->last >= 0) t->e[t->last].next = entry; else t->first = entry;
    t->last = entry;
    size_t slot;
    eids_find_slot(t, id, n, &slot);
    t->slots[slot] = ((uint64_t)(uint32_t)hash_bytes(id, n) << 32) | (uint32_t)(entry + 1);
    t->live++;
    Due d = {due_bucket_end(ts), entry};
    due_push(t, d);
    return 0;
}

/* ---------------------------------------------------------- the player store (_store) -- */
typedef struct {
    double mu, sigma, phi, pool, h_up, h_down;
    int64_t sigma_u, streak, n, last_ts, tier, rec_newest;
    int32_t name;
    int32_t win_len, win_head, rec_len, rec_head;
    uint8_t in_heap;
} Player;

typedef struct {
    int64_t expiry;
    uint32_t i;
} Active;

/* ------------------------------------------------------------- a decoded, buffered event -- */
typedef struct {
    int64_t ts;
    uint32_t arena, attacker, victim;
    uint8_t id_len;
    char id[MAX_ID];
} Event;

typedef struct {
    Event *ev;
    size_t head, count, cap; /* a ring */
} Queue;

/* --------------------------------------------------------------------------- the core -- */
typedef struct {
    PyObject_HEAD
    Params p;
    int64_t lateness, calibrate_every;
    int fixed;
    /* the snapshot in force */
    int has_taken;
    int64_t taken_at, active_count;
    double mean_mu_active;
    int has_bounds;
    double bounds[NB];
    /* the book */
    Names names;
    Player *players;
    size_t nplayers, pcap;
    double *win;
    int64_t *rec;
    i128 units;
    int has_watermark;
    int64_t watermark;
    int64_t counted, duplicates, rejected_self, rejected_bad_ts, rejected_bad_player;
    int64_t rejected_late;
    Active *heap;
    size_t heap_n, heap_cap;
    Pairs pairs;
    Eids ids;
    int64_t resends, reused;
    /* the rebuild's loop */
    int64_t now_ms, ts_low, ts_high;
    Py_ssize_t nparts;
    int64_t *ends;
    int64_t *part_wm;
    uint8_t *part_has_wm;
    Queue *queues;
    int64_t events, across, messages, late_partition;
    int64_t v_counted, v_duplicate, v_resend, v_reused, v_late;
} Core;

/* -- the active heap: (expiry, number) ascending, as RatingBook's `expiry << 32 | number` */
static inline int active_less(Active a, Active b) {
    return a.expiry < b.expiry || (a.expiry == b.expiry && a.i < b.i);
}

static int active_push(Core *c, Active x) {
    if (c->heap_n >= c->heap_cap) {
        size_t cap = c->heap_cap ? c->heap_cap * 2 : 4096;
        Active *heap = realloc(c->heap, cap * sizeof(Active));
        if (!heap) return -1;
        c->heap = heap;
        c->heap_cap = cap;
    }
    size_t i = c->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!active_less(x, c->heap[parent])) break;
        c->heap[i] = c->heap[parent];
        i = parent;
    }
    c->heap[i] = x;
    return 0;
}

static Active active_pop(Core *c) {
    Active *h = c->heap, top = h[0], last = h[--c->heap_n];
    size_t i = 0, n = c->heap_n;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= n) break;
        if (k + 1 < n && active_less(h[k + 1], h[k])) k++;
        if (!active_less(h[k], last)) break;
        h[i] = h[k];
        i = k;
    }
    if (n) h[i] = last;
    return top;
}

/* the n_active-th latest counted time, or NO_TS while fewer (PlayerStore.activity_time) */
static inline int64_t activity_time(Core *c, size_t i) {
    Player *r = &c->players[i];
    return r->rec_len == c->p.n_active ? c->rec[i * c->p.n_active + r->rec_head] : NO_TS;
}

static inline int64_t sigma_units(Core *c, double sigma) {
    return (int64_t)(sigma * c->p.sigma_scale);
}

static double sigma_mean(Core *c, i128 units, int64_t count) {
    return ldexp(int_truediv((unsigned __int128)units, (unsigned __int128)count),
                 -(int)c->p.sigma_k);
}

static int64_t track(Core *c, uint32_t name) {
    Params *p = &c->p;
    if (c->nplayers >= c->pcap) {
        size_t cap = c->pcap ? c->pcap * 2 : 4096;
        Player *players = realloc(c->players, cap * sizeof(Player));
        double *win = realloc(c->win, cap * p->window * sizeof(double));
        int64_t *rec = realloc(c->rec, cap * p->n_active * sizeof(int64_t));
        if (players) c->players = players;
        if (win) c->win = win;
        if (rec) c->rec = rec;
        if (!players || !win || !rec) return -1;
        c->pcap = cap;
    }
    size_t i = c->nplayers++;
    Player *r = &c->players[i];
    memset(r, 0, sizeof(*r));
    r->mu = p->mu0;
    r->sigma = p->sigma0;
    r->sigma_u = sigma_units(c, p->sigma0);
    r->last_ts = NO_TS;
    r->rec_newest = NO_TS;
    r->name = (int32_t)name;
    c->names.player[name] = (int32_t)i;
    c->units += r->sigma_u;
    return (int64_t)i;
}

static void expire(Core *c, int64_t now) {
    while (c->heap_n && c->heap[0].expiry <= now) {
        uint32_t i = active_pop(c).i;
        int64_t activity = activity_time(c, i);
        if (activity != NO_TS && activity + c->p.active_ms > now) {
            Active x = {activity + c->p.active_ms, i};
            active_push(c, x); /* room: one was just popped */
        } else {
            c->players[i].in_heap = 0;
        }
    }
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* RatingBook._snapshot_at when due, then take_snapshot (engine/_snapshot.py) */
static int take_snapshot(Core *c, int64_t now) {
    Params *p = &c->p;
    size_t cap = c->heap_n ? c->heap_n : 1, size = 0;
    double *sample = malloc((c->nplayers > cap ? c->nplayers : cap) * sizeof(double));
    if (!sample) return -1;
    for (size_t k = 0; k < c->heap_n; k++) { /* each active player has its one entry */
        uint32_t i = c->heap[k].i;
        int64_t activity = activity_time(c, i);
        if (activity != NO_TS && activity + p->active_ms > now) sample[size++] = c->players[i].mu;
    }
    if (size == 0) {
        for (size_t i = 0; i < c->nplayers; i++) sample[size++] = c->players[i].mu;
    }
    double mean = size ? fsum(sample, size) / (double)size : p->mu0;
    if ((int64_t)size >= p->p_min) {
        qsort(sample, size, sizeof(double), cmp_double);
        double targets[NB];
        for (int k = 0; k < NB; k++) {
            int64_t up = (p->q_num[k] * (int64_t)size + p->q_den[k] - 1) / p->q_den[k];
            int64_t idx = up - 1;
            if (idx < 0) idx = 0;
            if (idx > (int64_t)size - 1) idx = (int64_t)size - 1;
            targets[k] = sample[idx];
        }
        if (!c->has_bounds) {
            memcpy(c->bounds, targets, sizeof(targets));
            c->has_bounds = 1;
        } else {
            double beta = p->beta;
            for (int k = 0; k < NB; k++) c->bounds[k] = (1.0 - beta) * c->bounds[k] + beta * targets[k];
        }
    }
    free(sample);
    c->has_taken = 1;
    c->taken_at = now;
    c->mean_mu_active = mean;
    c->active_count = (int64_t)size;
    return 0;
}

/* ------------------------------------------------------------ steps 5-13 (engine/_kill) -- */
typedef struct {
    double mu, sigma, phi, pool, h_up, h_down, delta_mu;
    int64_t units, n, tier, streak;
} Next;

static void decayed(Core *c, Player *r, int64_t ts, double *mu, double *sigma, int *returning) {
    Params *p = &c->p;
    *mu = r->mu;
    *sigma = r->sigma;
    *returning = 0;
    if (r->n == 0 || r->last_ts == NO_TS) return;
    int64_t d = ts - r->last_ts;
    double gap = (double)(d > 0 ? d : 0) / MS_PER_DAY;
    int ret = gap > p->t_return;
    double idle = gap;
    if (p->decay_grace != 0.0) idle = gap > p->decay_grace ? gap - p->decay_grace : 0.0;
    double dmu = r->mu;
    if (!(idle <= 0.0)) {
        double mean = c->mean_mu_active;
        dmu = mean + (r->mu - mean) * exp(-idle / p->tau);
    }
    if (p->bound_return_decay != 0.0 && ret)
        dmu = r->mu + pmax(-p->delta_max, pmin(p->delta_max, dmu - r->mu));
    double ds = r->sigma;
    if (!(gap <= 0.0)) ds = pmin(p->sigma_max, r->sigma + p->sigma_drift * gap);
    *mu = dmu;
    *sigma = ds;
    *returning = ret;
}

static double eta(Params *p, double sigma, int64_t streak, double w_bar, double phi) {
    double peak = p->sigma_peak;
    double shape = (2.0 * sigma * peak) / (sigma * sigma + peak * peak);
    double base = p->eta_min + (p->eta_max - p->eta_min) * shape;
    int64_t s = streak < p->s_max ? streak : p->s_max;
    double e_streak = 1.0 + p->rho_s * (double)s;
    double e_vol = 1.0 / (1.0 + p->rho_v * (w_bar / p->w_ref));
    double e_trend = 1.0 + p->gamma_phi * pmax(0.0, phi);
    return base * e_streak * e_vol * e_trend;
}

static void next_scalars(Core *c, Player *r, double mu, double sigma, int returning, double raw,
                         double error, int won, Next *out) {
    Params *p = &c->p;
    double pool = r->pool, pool_next, target;
    double lam = p->lambda_pool;
    if (returning) {
        double eff = raw * (p->sigma0 / (sigma + p->sigma0));
        pool_next = pmin(p->nu_max, pmax(p->nu_min, (1.0 - lam) * pool + p->alpha * eff));
        target = mu + (1.0 - p->alpha) * eff + lam * pool;
    } else {
        pool_next = (1.0 - lam) * pool;
        target = mu + raw + lam * pool;
    }
    double step = pmin(p->delta_max, pmax(-p->delta_max, target - mu));
    if (step < 0.0 && p->floor_margin != 0.0) {
        double d = mu - p->mu_min;
        if (!(step >= 0.0 || d >= p->floor_margin)) step = step * (d / p->floor_margin);
    }
    double mu_next = pmin(p->mu_max, pmax(p->mu_min, mu + step));
    double dmu = mu_next - mu;
    double mid_sq = sigma * sigma + dmu * dmu;
    double reduced = 1.0 / sqrt(1.0 / mid_sq + 1.0 / (p->gamma * p->gamma));
    double sigma_new = pmin(p->sigma_max, pmax(p->sigma_min, reduced));
    int64_t n_next = r->n + 1;
    int64_t tier = r->tier;
    double h_up = r->h_up, h_down = r->h_down;
    if (c->has_bounds) {
        const double *b = c->bounds;
        if (tier == 0) {
            if (n_next >= p->n_min && sigma_new <= p->sigma_place) {
                int64_t k = TIERS;
                for (int j = 0; j < NB; j++) {
                    if (mu_next >= b[j]) { k = j + 1; break; }
                }
                tier = k;
                h_up = 0.0;
                h_down = 0.0;
            }
        } else {
            double up = 0.0, down = 0.0;
            if (tier > 1) {
                double upper = b[tier - 2];
                if (mu_next >= upper) up = h_up + (mu_next - upper);
            }
            if (tier < TIERS) {
                double lower = b[tier - 1];
                if (mu_next < lower) down = h_down + (lower - mu_next);
            }
            if (up >= p->h_req) {
                tier = tier - 1; h_up = 0.0; h_down = 0.0;
            } else if (down >= p->h_req) {
                tier = tier + 1; h_up = 0.0; h_down = 0.0;
            } else {
                h_up = up; h_down = down;
            }
        }
    }
    double lphi = p->lambda_phi;
    out->mu = mu_next;
    out->sigma = sigma_new;
    out->units = sigma_units(c, sigma_new);
    out->pool = pool_next;
    out->n = n_next;
    out->tier = tier;
    out->h_up = h_up;
    out->h_down = h_down;
    out->streak = won ? r->streak + 1 : 0;
    out->phi = pmin(1.0, pmax(-1.0, (1.0 - lphi) * r->phi + lphi * error));
    out->delta_mu = dmu;
}

static double window_mean(Core *c, size_t i) {
    Player *r = &c->players[i];
    if (r->win_len == 0) return 0.0;
    return fsum(c->win + i * c->p.window, (size_t)r->win_len) / (double)r->win_len;
}

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static int update_player(Core *c, size_t i, Next *s, int64_t ts) {
    Params *p = &c->p;
    Player *r = &c->players[i];
    r->mu = s->mu; r->sigma = s->sigma; r->sigma_u = s->units; r->pool = s->pool; r->n = s->n;
    r->tier = s->tier; r->h_up = s->h_up; r->h_down = s->h_down; r->streak = s->streak;
    r->phi = s->phi;
    r->last_ts = ts;
    /* push_window */
    int64_t L = p->window;
    double a = fabs(s->delta_mu);
    if (r->win_len < L) {
        c->win[i * L + r->win_len++] = a;
    } else {
        c->win[i * L + r->win_head] = a;
        r->win_head = r->win_head + 1 < L ? r->win_head + 1 : 0;
    }
    /* push_recent */
    int64_t R = p->n_active, *rec = c->rec + i * R;
    if (ts >= r->rec_newest) {
        r->rec_newest = ts;
        if (r->rec_len < R) {
            rec[r->rec_len++] = ts;
        } else {
            rec[r->rec_head] = ts;
            r->rec_head = r->rec_head + 1 < R ? r->rec_head + 1 : 0;
        }
    } else {
        int64_t grown[R + 1];
        int64_t len = r->rec_len;
        for (int64_t j = 0; j < len; j++) grown[j] = rec[(r->rec_head + j) % R];
        grown[len] = ts;
        qsort(grown, (size_t)len + 1, sizeof(int64_t), cmp_i64);
        int64_t keep = len + 1 > R ? R : len + 1;
        memcpy(rec, grown + (len + 1 - keep), (size_t)keep * sizeof(int64_t));
        r->rec_len = (int32_t)keep;
        r->rec_head = 0;
    }
    if (!r->in_heap) {
        int64_t activity = activity_time(c, i);
        if (activity != NO_TS) {
            Active x = {activity + p->active_ms, (uint32_t)i};
            if (active_push(c, x) < 0) return -1;
            r->in_heap = 1;
        }
    }
    return 0;
}

static int rate(Core *c, size_t ia, size_t ib, int64_t ts, int has_last, int64_t last) {
    Params *p = &c->p;
    Player *ra = &c->players[ia], *rb = &c->players[ib];
    int64_t units_a = ra->sigma_u, units_b = rb->sigma_u;
    double w_a = window_mean(c, ia), w_b = window_mean(c, ib);
    double weight = 1.0;
    if (p->repeat_window_ms && has_last) {
        int64_t gap = ts - last;
        if (gap < 0) gap = -gap;
        weight = gap >= p->repeat_window_ms ? 1.0 : (double)gap / (double)p->repeat_window_ms;
    }
    double mu_a, sigma_a, mu_b, sigma_b;
    int ret_a, ret_b;
    decayed(c, ra, ts, &mu_a, &sigma_a, &ret_a);
    decayed(c, rb, ts, &mu_b, &sigma_b, &ret_b);
    double d;
    if (p->own_sigma != 0.0) {
        d = p->theta + p->lambda_sigma * ((sigma_a + sigma_b) * 0.5);
    } else {
        i128 units = c->units + sigma_units(c, sigma_a) - units_a + sigma_units(c, sigma_b) - units_b;
        d = p->theta + p->lambda_sigma * sigma_mean(c, units, (int64_t)c->nplayers);
    }
    double prob;
    if (p->logistic_link != 0.0) {
        double z = (4.0 / M_PI) * ((mu_a - mu_b) / d);
        if (z >= 0.0) {
            prob = 1.0 / (1.0 + exp(-z));
        } else {
            double e = exp(z);
            prob = e / (1.0 + e);
        }
    } else {
        prob = 0.5 + atan((mu_a - mu_b) / d) / M_PI;
    }
    double eta_a = eta(p, sigma_a, ra->streak, w_a, ra->phi);
    double eta_b = eta(p, sigma_b, rb->streak, w_b, rb->phi);
    double raw_a = eta_a * (1.0 - prob);
    double raw_b = p->zero_sum_update != 0.0 ? -raw_a : -((p->c_loss * eta_b) * prob);
    if (weight != 1.0) {
        raw_a = raw_a * weight;
        raw_b = raw_b * weight;
    }
    Next na, nb;
    next_scalars(c, ra, mu_a, sigma_a, ret_a, raw_a, 1.0 - prob, 1, &na);
    next_scalars(c, rb, mu_b, sigma_b, ret_b, raw_b, prob - 1.0, 0, &nb);
    if (update_player(c, ia, &na, ts) < 0 || update_player(c, ib, &nb, ts) < 0) return -1;
    c->units += (i128)(na.units - units_a) + (i128)(nb.units - units_b);
    return 0;
}

/* ------------------------------------------------------ one event through the rules -- */
enum { V_COUNTED, V_DUPLICATE, V_RESEND, V_REUSED, V_LATE, V_SELF, V_BAD_TS, V_BAD_PLAYER };

/* RatingBook.apply */
static int book_apply(Core *c, Event *e, int *verdict) {
    Params *p = &c->p;
    int64_t ts = e->ts;
    if (e->attacker == e->victim) { c->rejected_self++; *verdict = V_SELF; return 0; }
    if (!(0 <= ts && ts <= MAX_TS_MS)) { c->rejected_bad_ts++; *verdict = V_BAD_TS; return 0; }
    if (c->has_watermark && ts < c->watermark - c->lateness) {
        c->rejected_late++;
        *verdict = V_LATE;
        return 0;
    }
    if (!c->has_watermark || ts > c->watermark) {
        c->has_watermark = 1;
        c->watermark = ts;
    }
    int64_t watermark = c->watermark;
    int64_t ia = c->names.player[e->attacker], ib = c->names.player[e->victim];
    int has_last = 0;
    int64_t last = 0;
    if (ia >= 0 && ib >= 0) {
        last = pairs_last(&c->pairs, ((uint64_t)ia << 32) | (uint64_t)ib, ts, watermark, &has_last);
        if (has_last) {
            int64_t gap = ts - last;
            if (gap < 0) gap = -gap;
            if (gap < p->cooldown_ms) {
                c->duplicates++;
                *verdict = V_DUPLICATE;
                return 0;
            }
        }
    }
    if (!c->fixed && (!c->has_taken || ts - c->taken_at >= c->calibrate_every)) {
        expire(c, ts);
        if (take_snapshot(c, ts) < 0) return -1;
    }
    if (ia < 0 && (ia = track(c, e->attacker)) < 0) return -1;
    if (ib < 0 && (ib = track(c, e->victim)) < 0) return -1;
    if (rate(c, (size_t)ia, (size_t)ib, ts, has_last, last) < 0) return -1;
    if (pairs_put(&c->pairs, ((uint64_t)ia << 32) | (uint64_t)ib, ts, watermark,
                  watermark - c->lateness - p->pair_memory_ms) < 0)
        return -1;
    c->counted++;
    *verdict = V_COUNTED;
    return 0;
}

/* CountingRules.apply */
static int rules_apply(Core *c, Event *e, int *verdict) {
    eids_forget(&c->ids, c->has_watermark, c->watermark);
    int late = c->has_watermark && e->ts < c->watermark - c->lateness;
    if (!late && e->attacker != e->victim) {
        size_t slot;
        if (eids_find_slot(&c->ids, e->id, e->id_len, &slot)) {
            Eid *seen = &c->ids.e[eids_entry(c->ids.slots[slot])];
            if (seen->arena == e->arena && seen->attacker == e->attacker &&
                seen->victim == e->victim && seen->ts == e->ts) {
                c->resends++;
                *verdict = V_RESEND;
            } else {
                c->reused++;
                *verdict = V_REUSED;
            }
            return 0;
        }
    }
    if (book_apply(c, e, verdict) < 0) return -1;
    if (*verdict == V_COUNTED &&
        eids_remember(&c->ids, e->id, e->id_len, e->arena, e->attacker, e->victim, e->ts) < 0)
        return -1;
    return 0;
}

/* adr_cli/rebuild.py's loop body: the partition's lateness first, then the rules */
static int process(Core *c, Py_ssize_t part, Event *e) {
    int64_t ts = e->ts;
    int verdict;
    if (c->part_has_wm[part] && ts < c->part_wm[part] - c->lateness) {
        verdict = V_LATE;
        c->late_partition++;
    } else {
        if (rules_apply(c, e, &verdict) < 0) return -1;
        if (verdict == V_COUNTED || verdict == V_DUPLICATE || verdict == V_RESEND) {
            if (!c->part_has_wm[part] || ts > c->part_wm[part]) {
                c->part_has_wm[part] = 1;
                c->part_wm[part] = ts;
            }
        } else if (verdict == V_LATE) {
            c->across++;
        }
    }
    switch (verdict) {
    case V_COUNTED: c->v_counted++; break;
    case V_DUPLICATE: c->v_duplicate++; break;
    case V_RESEND: c->v_resend++; break;
    case V_REUSED: c->v_reused++; break;
    case V_LATE: c->v_late++; break;
    default: break; /* self_kill, bad_ts, bad_player: the book counted them */
    }
    c->events++;
    return 0;
}

/* ------------------------------------------------------------------ the fast decoder -- */
/* A msgpack str of 1-64 ASCII bytes at *pos (fixstr or str8); 0 when anything else. */
static int read_id(const uint8_t *b, size_t n, size_t *pos, const char **s, size_t *len) {
    size_t i = *pos, l;
    if (i >= n) return 0;
    uint8_t t = b[i];
    if (t >= 0xa0 && t <= 0xbf) {
        l = t & 0x1f;
        i += 1;
    } else if (t == 0xd9 && i + 1 < n) {
        l = b[i + 1];
        i += 2;
    } else {
        return 0;
    }
    if (l == 0 || l > MAX_ID || i + l > n) return 0;
    for (size_t k = 0; k < l; k++)
        if (b[i + k] & 0x80) return 0;
    *s = (const char *)b + i;
    *len = l;
    *pos = i + l;
    return 1;
}

static int read_int(const uint8_t *b, size_t n, size_t *pos, int64_t *out) {
    size_t i = *pos;
    if (i >= n) return 0;
    uint8_t t = b[i];
    if (t <= 0x7f) { *out = t; *pos = i + 1; return 1; }
    if (t >= 0xe0) { *out = (int8_t)t; *pos = i + 1; return 1; }
    size_t w;
    int sign;
    switch (t) {
    case 0xcc: w = 1; sign = 0; break;
    case 0xcd: w = 2; sign = 0; break;
    case 0xce: w = 4; sign = 0; break;
    case 0xcf: w = 8; sign = 0; break;
    case 0xd0: w = 1; sign = 1; break;
    case 0xd1: w = 2; sign = 1; break;
    case 0xd2: w = 4; sign = 1; break;
    case 0xd3: w = 8; sign = 1; break;
    default: return 0;
    }
    if (i + 1 + w > n) return 0;
    uint64_t u = 0;
    for (size_t k = 0; k < w; k++) u = (u << 8) | b[i + 1 + k];
    if (sign) {
        int64_t v;
        switch (w) {
        case 1: v = (int8_t)u; break;
        case 2: v = (int16_t)u; break;
        case 4: v = (int32_t)u; break;
        default: v = (int64_t)u; break;
        }
        *out = v;
    } else {
        if (u > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)u;
    }
    *pos = i + 1 + w;
    return 1;
}

/* Decode the common case into *e; 0: not the common case (the Python decoder decides). */
static int fast_decode(Core *c, const uint8_t *b, size_t n, const char *key, Py_ssize_t key_len,
                       Event *e) {
    if (n == 0 || n > MAX_MESSAGE || b[0] != 0x86) return 0;
    size_t pos = 1;
    unsigned seen = 0;
    const char *strs[4] = {0};
    size_t lens[4] = {0};
    int64_t ts = 0;
    for (int k = 0; k < 6; k++) {
        const char *name;
        size_t nlen;
        if (!read_id(b, n, &pos, &name, &nlen)) return 0;
        int field = -1;
        if (nlen == 1 && name[0] == 'v') field = 0;
        else if (nlen == 2 && memcmp(name, "id", 2) == 0) field = 1;
        else if (nlen == 5 && memcmp(name, "arena", 5) == 0) field = 2;
        else if (nlen == 8 && memcmp(name, "attacker", 8) == 0) field = 3;
        else if (nlen == 6 && memcmp(name, "victim", 6) == 0) field = 4;
        else if (nlen == 2 && memcmp(name, "ts", 2) == 0) field = 5;
        if (field < 0 || (seen & (1u << field))) return 0;
        seen |= 1u << field;
        if (field == 0) {
            if (pos >= n || b[pos] != 0x01) return 0;
            pos++;
        } else if (field == 5) {
            if (!read_int(b, n, &pos, &ts)) return 0;
        } else if (!read_id(b, n, &pos, &strs[field - 1], &lens[field - 1])) {
            return 0;
        }
    }
    if (pos != n) return 0;
    if (lens[2] == lens[3] && memcmp(strs[2], strs[3], lens[2]) == 0) return 0; /* self kill */
    if (ts < c->ts_low || ts > c->ts_high) return 0;
    if (key == NULL || (size_t)key_len != lens[1] || memcmp(key, strs[1], lens[1]) != 0) return 0;
    int64_t arena = names_intern(&c->names, strs[1], lens[1]);
    int64_t attacker = names_intern(&c->names, strs[2], lens[2]);
    int64_t victim = names_intern(&c->names, strs[3], lens[3]);
    if (arena < 0 || attacker < 0 || victim < 0) return -1;
    e->ts = ts;
    e->arena = (uint32_t)arena;
    e->attacker = (uint32_t)attacker;
    e->victim = (uint32_t)victim;
    e->id_len = (uint8_t)lens[0];
    memcpy(e->id, strs[0], lens[0]);
    return 1;
}

static Event *queue_slot(Queue *q) {
    if (q->count >= q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 4096;
        Event *ev = malloc(cap * sizeof(Event));
        if (!ev) return NULL;
        for (size_t k = 0; k < q->count; k++) ev[k] = q->ev[(q->head + k) % q->cap];
        free(q->ev);
        q->ev = ev;
        q->head = 0;
        q->cap = cap;
    }
    return &q->ev[(q->head + q->count) % q->cap];
}

/* -------------------------------------------------------------------- Python methods -- */
static PyObject *s_error, *s_value, *s_key, *s_partition, *s_offset;

static void core_dealloc(Core *c) {
    free(c->names.bytes); free(c->names.off); free(c->names.len); free(c->names.player);
    free(c->names.slots);
    free(c->players); free(c->win); free(c->rec); free(c->heap);
    omap_free(&c->pairs.a); omap_free(&c->pairs.b);
    for (size_t r = 0; r < c->pairs.run_count; r++) {
        free(c->pairs.runs[c->pairs.run_head + r].keys);
        free(c->pairs.runs[c->pairs.run_head + r].stamps);
    }
    free(c->pairs.runs);
    free(c->ids.e); free(c->ids.slots); free(c->ids.heap);
    if (c->queues)
        for (Py_ssize_t k = 0; k < c->nparts; k++) free(c->queues[k].ev);
    free(c->queues); free(c->ends); free(c->part_wm); free(c->part_has_wm);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

#define FLOAT_PARAMS                                                                            \
    X(mu0) X(mu_min) X(mu_max) X(sigma0) X(sigma_min) X(sigma_max) X(gamma) X(sigma_peak)      \
    X(eta_min) X(eta_max) X(rho_s) X(rho_v) X(w_ref) X(gamma_phi) X(lambda_phi) X(c_loss)      \
    X(theta) X(lambda_sigma) X(tau) X(sigma_drift) X(t_return) X(alpha) X(lambda_pool)         \
    X(nu_min) X(nu_max) X(delta_max) X(sigma_place) X(h_req) X(beta) X(bound_return_decay)     \
    X(zero_sum_update) X(floor_margin) X(decay_grace) X(logistic_link) X(own_sigma)            \
    X(sigma_scale)
#define INT_PARAMS                                                                              \
    X(s_max) X(n_min) X(n_active) X(p_min) X(window) X(cooldown_ms) X(repeat_window_ms)        \
    X(pair_memory_ms) X(active_ms) X(sigma_k)

static int get_float(PyObject *d, const char *name, double *out) {
    PyObject *v = PyDict_GetItemString(d, name);
    if (!v) { PyErr_Format(PyExc_KeyError, "parameter %s", name); return -1; }
    *out = PyFloat_AsDouble(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int get_int(PyObject *d, const char *name, int64_t *out) {
    PyObject *v = PyDict_GetItemString(d, name);
    if (!v) { PyErr_Format(PyExc_KeyError, "parameter %s", name); return -1; }
    *out = PyLong_AsLongLong(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* Core(params: dict, quantiles: [(num, den)] * 14, lateness_ms, calibrate_every_ms,
 *      snapshot: None | (taken_at | None, mean, boundaries | None, active_count) (a fixed one),
 *      ts_low, ts_high, ends: [end offset per partition]) */
static int core_init(Core *c, PyObject *args, PyObject *kw) {
    PyObject *params, *quantiles, *snapshot, *ends;
    long long lateness, every, low, high;
    if (!PyArg_ParseTuple(args, "O!OLLOLLO", &PyDict_Type, &params, &quantiles, &lateness, &every,
                          &snapshot, &low, &high, &ends))
        return -1;
    if (c->names.slots) {
        PyErr_SetString(PyExc_RuntimeError, "Core is initialised once");
        return -1;
    }
    Params *p = &c->p;
#define X(name) if (get_float(params, #name, &p->name) < 0) return -1;
    FLOAT_PARAMS
#undef X
#define X(name) if (get_int(params, #name, &p->name) < 0) return -1;
    INT_PARAMS
#undef X
    PyObject *q = PySequence_Fast(quantiles, "quantiles must be a sequence");
    if (!q) return -1;
    if (PySequence_Fast_GET_SIZE(q) != NB) {
        Py_DECREF(q);
        PyErr_SetString(PyExc_ValueError, "14 quantiles expected");
        return -1;
    }
    for (int k = 0; k < NB; k++) {
        long long num, den;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(q, k), "LL", &num, &den)) {
            Py_DECREF(q);
            return -1;
        }
        p->q_num[k] = num;
        p->q_den[k] = den;
    }
    Py_DECREF(q);
    c->lateness = lateness;
    c->calibrate_every = every;
    c->ts_low = low;
    c->ts_high = high;
    if (snapshot != Py_None) {
        PyObject *taken, *bounds;
        double mean;
        long long count;
        if (!PyArg_ParseTuple(snapshot, "OdOL", &taken, &mean, &bounds, &count)) return -1;
        c->fixed = 1;
        c->has_taken = taken != Py_None;
        if (c->has_taken && (c->taken_at = PyLong_AsLongLong(taken)) == -1 && PyErr_Occurred())
            return -1;
        c->mean_mu_active = mean;
        c->active_count = count;
        if (bounds != Py_None) {
            PyObject *bs = PySequence_Fast(bounds, "boundaries must be a sequence");
            if (!bs) return -1;
            if (PySequence_Fast_GET_SIZE(bs) != NB) {
                Py_DECREF(bs);
                PyErr_SetString(PyExc_ValueError, "14 boundaries expected");
                return -1;
            }
            for (int k = 0; k < NB; k++) c->bounds[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(bs, k));
            Py_DECREF(bs);
            if (PyErr_Occurred()) return -1;
            c->has_bounds = 1;
        }
    } else {
        c->mean_mu_active = p->mu0;
    }
    PyObject *e = PySequence_Fast(ends, "ends must be a sequence");
    if (!e) return -1;
    c->nparts = PySequence_Fast_GET_SIZE(e);
    c->ends = calloc(c->nparts + 1, sizeof(int64_t));
    c->part_wm = calloc(c->nparts + 1, sizeof(int64_t));
    c->part_has_wm = calloc(c->nparts + 1, 1);
    c->queues = calloc(c->nparts + 1, sizeof(Queue));
    for (Py_ssize_t k = 0; k < c->nparts; k++) c->ends[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(e, k));
    Py_DECREF(e);
    if (PyErr_Occurred()) return -1;
    c->names.mask = 4095;
    c->names.slots = calloc(4096, sizeof(uint32_t));
    c->ids.mask = 4095;
    c->ids.slots = calloc(4096, sizeof(uint64_t));
    c->ids.free_head = c->ids.first = c->ids.last = -1;
    c->ids.keep_ms = lateness + p->pair_memory_ms;
    Pairs *t = &c->pairs;
    int64_t spread = (lateness + p->pair_memory_ms) / RUNS_PER_HORIZON;
    t->cooldown = p->pair_memory_ms;
    t->sweep_every = MIN_SWEEP_MS;
    if (2 * p->pair_memory_ms > t->sweep_every) t->sweep_every = 2 * p->pair_memory_ms;
    if (spread > t->sweep_every) t->sweep_every = spread;
    if (!c->ends || !c->part_wm || !c->part_has_wm || !c->queues || !c->names.slots ||
        !c->ids.slots || omap_init(&t->a) < 0 || omap_init(&t->b) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    t->fresh = &t->a;
    t->old = &t->b;
    return 0;
}

/* feed(messages, start) -> index: decodes messages[start:] into the partitions' buffers up to
 * the first one the Python side must handle (an error, an unknown partition, anything the fast
 * decoder does not take), whose index it returns; len(messages) when all were taken. Messages
 * at or past their partition's end are skipped; the others are counted in `messages`. */
static PyObject *core_feed(Core *c, PyObject *args) {
    PyObject *list;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &list, &start)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list), i;
    for (i = start; i < n; i++) {
        PyObject *m = PyList_GET_ITEM(list, i);
        PyObject *err = PyObject_CallMethodNoArgs(m, s_error);
        if (!err) return NULL;
        int has_err = err != Py_None;
        Py_DECREF(err);
        if (has_err) break;
        PyObject *po = PyObject_CallMethodNoArgs(m, s_partition);
        if (!po) return NULL;
        if (po == Py_None) { Py_DECREF(po); break; }
        long long part = PyLong_AsLongLong(po);
        Py_DECREF(po);
        if (part == -1 && PyErr_Occurred()) return NULL;
        if (part < 0 || part >= c->nparts) break;
        PyObject *oo = PyObject_CallMethodNoArgs(m, s_offset);
        if (!oo) return NULL;
        if (oo == Py_None) { Py_DECREF(oo); break; }
        long long offset = PyLong_AsLongLong(oo);
        Py_DECREF(oo);
        if (offset == -1 && PyErr_Occurred()) return NULL;
        if (offset >= c->ends[part]) continue; /* past the end the rebuild stops at */
        PyObject *value = PyObject_CallMethodNoArgs(m, s_value);
        if (!value) return NULL;
        PyObject *key = PyObject_CallMethodNoArgs(m, s_key);
        if (!key) { Py_DECREF(value); return NULL; }
        int took = 0;
        Queue *q = &c->queues[part];
        if (PyBytes_Check(value) && (key == Py_None || PyBytes_Check(key))) {
            Event *slot = queue_slot(q);
            if (!slot) { Py_DECREF(value); Py_DECREF(key); return PyErr_NoMemory(); }
            took = fast_decode(c, (const uint8_t *)PyBytes_AS_STRING(value),
                               (size_t)PyBytes_GET_SIZE(value),
                               key == Py_None ? NULL : PyBytes_AS_STRING(key),
                               key == Py_None ? 0 : PyBytes_GET_SIZE(key), slot);
        }
        Py_DECREF(value);
        Py_DECREF(key);
        if (took < 0) return PyErr_NoMemory();
        if (!took) break;
        q->count++;
        c->messages++;
    }
    return PyLong_FromSsize_t(i);
}

/* push(partition, id, arena, attacker, victim, ts): an event the Python decoder accepted. */
static PyObject *core_push(Core *c, PyObject *args) {
    Py_ssize_t part;
    const char *id, *arena, *attacker, *victim;
    Py_ssize_t lid, larena, lattacker, lvictim;
    long long ts;
    if (!PyArg_ParseTuple(args, "ns#s#s#s#L", &part, &id, &lid, &arena, &larena, &attacker,
                          &lattacker, &victim, &lvictim, &ts))
        return NULL;
    if (part < 0 || part >= c->nparts || lid < 1 || lid > MAX_ID || larena < 1 ||
        larena > MAX_ID || lattacker < 1 || lattacker > MAX_ID || lvictim < 1 || lvictim > MAX_ID) {
        PyErr_SetString(PyExc_ValueError, "push: partition or id out of range");
        return NULL;
    }
    Queue *q = &c->queues[part];
    Event *e = queue_slot(q);
    if (!e) return PyErr_NoMemory();
    int64_t a = names_intern(&c->names, arena, (size_t)larena);
    int64_t x = names_intern(&c->names, attacker, (size_t)lattacker);
    int64_t y = names_intern(&c->names, victim, (size_t)lvictim);
    if (a < 0 || x < 0 || y < 0) return PyErr_NoMemory();
    e->ts = ts;
    e->arena = (uint32_t)a;
    e->attacker = (uint32_t)x;
    e->victim = (uint32_t)y;
    e->id_len = (uint8_t)lid;
    memcpy(e->id, id, (size_t)lid);
    q->count++;
    Py_RETURN_NONE;
}

static PyObject *core_buffered(Core *c, PyObject *arg) {
    Py_ssize_t part = PyLong_AsSsize_t(arg);
    if (part == -1 && PyErr_Occurred()) return NULL;
    if (part < 0 || part >= c->nparts) {
        PyErr_SetString(PyExc_ValueError, "no such partition");
        return NULL;
    }
    return PyLong_FromSize_t(c->queues[part].count);
}

/* merge(open): read_log's merge: while every open partition has a buffered head, hand out the
 * head with the smallest (ts, partition) and count and rate it; stop when an open partition
 * runs dry. With no open partition, everything buffered. */
static PyObject *core_merge(Core *c, PyObject *arg) {
    PyObject *fast = PySequence_Fast(arg, "merge takes a sequence of partitions");
    if (!fast) return NULL;
    uint8_t *open = calloc(c->nparts + 1, 1);
    if (!open) { Py_DECREF(fast); return PyErr_NoMemory(); }
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(fast); k++) {
        Py_ssize_t part = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(fast, k));
        if (part == -1 && PyErr_Occurred()) { free(open); Py_DECREF(fast); return NULL; }
        if (part >= 0 && part < c->nparts) open[part] = 1;
    }
    Py_DECREF(fast);
    for (Py_ssize_t k = 0; k < c->nparts; k++) {
        if (open[k] && c->queues[k].count == 0) { free(open); Py_RETURN_NONE; }
    }
    for (;;) {
        Py_ssize_t best = -1;
        int64_t best_ts = 0;
        for (Py_ssize_t k = 0; k < c->nparts; k++) {
            Queue *q = &c->queues[k];
            if (q->count && (best < 0 || q->ev[q->head].ts < best_ts)) {
                best = k;
                best_ts = q->ev[q->head].ts;
            }
        }
        if (best < 0) break;
        Queue *q = &c->queues[best];
        Event *e = &q->ev[q->head];
        if (process(c, best, e) < 0) { free(open); return PyErr_NoMemory(); }
        q->head = (q->head + 1) % q->cap;
        q->count--;
        if (q->count == 0 && open[best]) break;
    }
    free(open);
    Py_RETURN_NONE;
}

static PyObject *dict_set_int(PyObject *d, const char *key, long long v) {
    PyObject *o = PyLong_FromLongLong(v);
    if (!o || PyDict_SetItemString(d, key, o) < 0) { Py_XDECREF(o); return NULL; }
    Py_DECREF(o);
    return d;
}

/* result() -> dict of the counters, watermarks and snapshot (see _rebuild_native.NativeRun) */
static PyObject *core_result(Core *c, PyObject *unused) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    struct { const char *k; int64_t v; } ints[] = {
        {"events", c->events}, {"messages", c->messages}, {"counted", c->counted},
        {"across", c->across}, {"resends", c->resends}, {"reused", c->reused},
        {"v_counted", c->v_counted}, {"v_duplicate", c->v_duplicate}, {"v_resend", c->v_resend},
        {"v_id_reused", c->v_reused}, {"v_late", c->v_late}, {"v_self_kill", c->rejected_self},
        {"v_bad_ts", c->rejected_bad_ts}, {"v_bad_player", c->rejected_bad_player},
        {"players", (int64_t)c->nplayers}, {"event_ids", (int64_t)c->ids.live},
    };
    for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++)
        if (!dict_set_int(d, ints[k].k, ints[k].v)) goto fail;
    PyObject *wms = PyDict_New();
    if (!wms || PyDict_SetItemString(d, "watermarks", wms) < 0) { Py_XDECREF(wms); goto fail; }
    Py_DECREF(wms);
    for (Py_ssize_t k = 0; k < c->nparts; k++) {
        if (!c->part_has_wm[k]) continue;
        PyObject *key = PyLong_FromSsize_t(k), *val = PyLong_FromLongLong(c->part_wm[k]);
        if (!key || !val || PyDict_SetItem(wms, key, val) < 0) {
            Py_XDECREF(key); Py_XDECREF(val); goto fail;
        }
        Py_DECREF(key); Py_DECREF(val);
    }
    unsigned __int128 su = (unsigned __int128)c->units;
    PyObject *high = PyLong_FromUnsignedLongLong((unsigned long long)(su >> 64));
    PyObject *sixty_four = PyLong_FromLong(64);
    PyObject *low = PyLong_FromUnsignedLongLong((unsigned long long)su);
    PyObject *shifted = high && sixty_four ? PyNumber_Lshift(high, sixty_four) : NULL;
    PyObject *total = shifted && low ? PyNumber_Or(shifted, low) : NULL;
    Py_XDECREF(high);
    Py_XDECREF(sixty_four);
    Py_XDECREF(low);
    Py_XDECREF(shifted);
    if (!total || PyDict_SetItemString(d, "sigma_units", total) < 0) { Py_XDECREF(total); goto fail; }
    Py_DECREF(total);
    PyObject *bounds = Py_None;
    Py_INCREF(Py_None);
    if (c->has_bounds) {
        Py_DECREF(Py_None);
        bounds = PyTuple_New(NB);
        if (!bounds) goto fail;
        for (int k = 0; k < NB; k++) PyTuple_SET_ITEM(bounds, k, PyFloat_FromDouble(c->bounds[k]));
    }
    PyObject *taken = c->has_taken ? PyLong_FromLongLong(c->taken_at) : (Py_INCREF(Py_None), Py_None);
    PyObject *snap = Py_BuildValue("(NdNL)", taken, c->mean_mu_active, bounds,
                                   (long long)c->active_count);
    if (!snap || PyDict_SetItemString(d, "snapshot", snap) < 0) { Py_XDECREF(snap); goto fail; }
    Py_DECREF(snap);
    PyObject *wm = c->has_watermark ? PyLong_FromLongLong(c->watermark) : (Py_INCREF(Py_None), Py_None);
    if (!wm || PyDict_SetItemString(d, "watermark", wm) < 0) { Py_XDECREF(wm); goto fail; }
    Py_DECREF(wm);
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static int cmp_name_players(const void *x, const void *y, void *core) {
    Core *c = core;
    const Player *a = &c->players[*(const uint32_t *)x], *b = &c->players[*(const uint32_t *)y];
    Names *t = &c->names;
    size_t la = t->len[a->name], lb = t->len[b->name];
    int r = memcmp(t->bytes + t->off[a->name], t->bytes + t->off[b->name], la < lb ? la : lb);
    return r ? r : (la > lb) - (la < lb);
}

static Core *sort_core;
static int cmp_players(const void *x, const void *y) { return cmp_name_players(x, y, sort_core); }

/* players() -> [(id, mu, sigma, streak, phi, pool, n, last_ts | None, tier, h_up, h_down,
 * window, recent)] by id (UTF-8 byte order is code point order: Python's sorted). */
static PyObject *core_players(Core *c, PyObject *unused) {
    size_t n = c->nplayers;
    uint32_t *order = malloc((n ? n : 1) * sizeof(uint32_t));
    if (!order) return PyErr_NoMemory();
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    sort_core = c;
    qsort(order, n, sizeof(uint32_t), cmp_players);
    PyObject *out = PyList_New((Py_ssize_t)n);
    if (!out) { free(order); return NULL; }
    int64_t L = c->p.window, R = c->p.n_active;
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        Player *r = &c->players[i];
        PyObject *win = PyTuple_New(r->win_len), *rec = PyTuple_New(r->rec_len);
        if (!win || !rec) { Py_XDECREF(win); Py_XDECREF(rec); goto fail; }
        for (int32_t j = 0; j < r->win_len; j++)
            PyTuple_SET_ITEM(win, j, PyFloat_FromDouble(c->win[i * L + (r->win_head + j) % L]));
        for (int32_t j = 0; j < r->rec_len; j++)
            PyTuple_SET_ITEM(rec, j, PyLong_FromLongLong(c->rec[i * R + (r->rec_head + j) % R]));
        PyObject *last = r->last_ts == NO_TS ? (Py_INCREF(Py_None), Py_None)
                                             : PyLong_FromLongLong(r->last_ts);
        PyObject *item = Py_BuildValue("(NddLddLNLddNN)", names_str(&c->names, r->name), r->mu,
                                       r->sigma, (long long)r->streak, r->phi, r->pool,
                                       (long long)r->n, last, (long long)r->tier, r->h_up,
                                       r->h_down, win, rec);
        if (!item) goto fail;
        PyList_SET_ITEM(out, (Py_ssize_t)k, item);
    }
    free(order);
    return out;
fail:
    free(order);
    Py_DECREF(out);
    return NULL;
}

/* cooldowns() -> [(attacker, victim, ts)] in RatingBook.cooldowns()'s order (PairTable.items:
 * the runs oldest first, then the old dict, then the new one; a pair keeps its first place and
 * takes the newest value). */
static PyObject *core_cooldowns(Core *c, PyObject *unused) {
    OMap all;
    if (omap_init(&all) < 0) return PyErr_NoMemory();
    Pairs *t = &c->pairs;
    for (size_t r = 0; r < t->run_count; r++) {
        Run *run = &t->runs[t->run_head + r];
        for (size_t k = 0; k < run->n; k++)
            if (omap_put(&all, run->keys[k], run->stamps[k]) < 0) goto nomem;
    }
    OMap *maps[2] = {t->old, t->fresh};
    for (int m = 0; m < 2; m++)
        for (size_t k = 0; k < maps[m]->count; k++)
            if (omap_put(&all, maps[m]->keys[k], maps[m]->vals[k]) < 0) goto nomem;
    PyObject *out = PyList_New((Py_ssize_t)all.count);
    if (!out) { omap_free(&all); return NULL; }
    for (size_t k = 0; k < all.count; k++) {
        uint32_t a = (uint32_t)(all.keys[k] >> 32), b = (uint32_t)(all.keys[k] & 0xffffffffu);
        PyObject *item = Py_BuildValue("(NNL)", names_str(&c->names, c->players[a].name),
                                       names_str(&c->names, c->players[b].name),
                                       (long long)all.vals[k]);
        if (!item) { Py_DECREF(out); omap_free(&all); return NULL; }
        PyList_SET_ITEM(out, (Py_ssize_t)k, item);
    }
    omap_free(&all);
    return out;
nomem:
    omap_free(&all);
    return PyErr_NoMemory();
}

/* event_ids() -> [(id, (arena, attacker, victim, ts))] in EventIds.items()'s order */
static PyObject *core_event_ids(Core *c, PyObject *unused) {
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    Eids *t = &c->ids;
    for (int32_t x = t->first; x >= 0; x = t->e[x].next) {
        Eid *e = &t->e[x];
        PyObject *item = Py_BuildValue(
            "(N(NNNL))", PyUnicode_DecodeUTF8(e->id, e->len, "strict"),
            names_str(&c->names, e->arena), names_str(&c->names, e->attacker),
            names_str(&c->names, e->victim), (long long)e->ts);
        if (!item || PyList_Append(out, item) < 0) { Py_XDECREF(item); Py_DECREF(out); return NULL; }
        Py_DECREF(item);
    }
    return out;
}

/* ------------------------------------------- the records as packed Redis commands -- */
/* BLAKE2b (RFC 7693), unkeyed, for consumer/_batch.content_digest's 8-byte digest. */
static const uint64_t b2_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
static const uint8_t b2_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

static inline uint64_t rotr64(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static void b2_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t v[16], m[16];
    for (int i = 0; i < 16; i++) {
        uint64_t w = 0;
        for (int k = 7; k >= 0; k--) w = (w << 8) | block[8 * i + k];
        m[i] = w;
    }
    for (int i = 0; i < 8; i++) { v[i] = h[i]; v[i + 8] = b2_iv[i]; }
    v[12] ^= t;
    if (last) v[14] = ~v[14];
#define G(a, b, c, d, x, y)                                                                     \
    do {                                                                                        \
        v[a] = v[a] + v[b] + x; v[d] = rotr64(v[d] ^ v[a], 32);                                 \
        v[c] = v[c] + v[d]; v[b] = rotr64(v[b] ^ v[c], 24);                                     \
        v[a] = v[a] + v[b] + y; v[d] = rotr64(v[d] ^ v[a], 16);                                 \
        v[c] = v[c] + v[d]; v[b] = rotr64(v[b] ^ v[c], 63);                                     \
    } while (0)
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = b2_sigma[r];
        G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
#undef G
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* 16 lower-case hex digits of BLAKE2b-64(data) into out */
static void blake2b64_hex(const uint8_t *data, size_t n, char out[16]) {
    uint64_t h[8];
    uint8_t block[128];
    memcpy(h, b2_iv, sizeof(h));
    h[0] ^= 0x01010000ULL ^ 8ULL;
    size_t done = 0;
    while (n - done > 128) {
        b2_compress(h, data + done, done + 128, 0);
        done += 128;
    }
    memset(block, 0, sizeof(block));
    memcpy(block, data + done, n - done);
    b2_compress(h, block, n, 1);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++) {
        uint8_t byte = (uint8_t)(h[0] >> (8 * i));
        out[2 * i] = hex[byte >> 4];
        out[2 * i + 1] = hex[byte & 15];
    }
}

static size_t utf8_chars(const char *s, size_t n) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) count += ((uint8_t)s[i] & 0xc0) != 0x80;
    return count;
}

typedef struct {
    char *b;
    size_t n, cap;
    int failed;
} Buf;

static void buf_put(Buf *b, const void *data, size_t n) {
    if (b->failed) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->n + n) cap *= 2;
        char *grown = realloc(b->b, cap);
        if (!grown) { b->failed = 1; return; }
        b->b = grown;
        b->cap = cap;
    }
    memcpy(b->b + b->n, data, n);
    b->n += n;
}

static void buf_fmt(Buf *b, const char *fmt, long long v) {
    char tmp[48];
    int k = snprintf(tmp, sizeof(tmp), fmt, v);
    buf_put(b, tmp, (size_t)k);
}

/* One RESP bulk string ("$len\r\n" data "\r\n"), data given in up to three parts. */
static void bulk3(Buf *b, const char *x, size_t nx, const char *y, size_t ny, const char *z,
                  size_t nz) {
    buf_fmt(b, "$%lld\r\n", (long long)(nx + ny + nz));
    buf_put(b, x, nx);
    buf_put(b, y, ny);
    buf_put(b, z, nz);
    buf_put(b, "\r\n", 2);
}

static void bulk_int(Buf *b, int64_t v) {
    char tmp[24];
    int k = snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
    bulk3(b, tmp, (size_t)k, NULL, 0, NULL, 0);
}

/* Commands of `head` plus up to `limit` items each: the item bytes are in items (each a
 * complete bulk string), item_ends[k] the end of item k. Appends one bytes object per command
 * to out, as BulkWriter.variadic (MEMBERS_PER_COMMAND groups). */
static int variadic(PyObject *out, const char *head, size_t head_n, int head_args, Buf *items,
                    size_t *item_ends, size_t count, size_t limit) {
    size_t start = 0, from = 0;
    while (start < count) {
        size_t take = count - start < limit ? count - start : limit;
        size_t to = item_ends[start + take - 1];
        Buf cmd = {0};
        buf_fmt(&cmd, "*%lld\r\n", (long long)(head_args + take));
        buf_put(&cmd, head, head_n);
        buf_put(&cmd, items->b + from, to - from);
        if (cmd.failed) { free(cmd.b); PyErr_NoMemory(); return -1; }
        PyObject *bytes = PyBytes_FromStringAndSize(cmd.b, (Py_ssize_t)cmd.n);
        free(cmd.b);
        if (!bytes || PyList_Append(out, bytes) < 0) { Py_XDECREF(bytes); return -1; }
        Py_DECREF(bytes);
        start += take;
        from = to;
    }
    return 0;
}

typedef struct {
    int64_t end;
    uint32_t kind; /* 0 cooldown, 1 event id */
    uint32_t seq;  /* first-appearance order of the bucket within its kind */
} BucketRef;

static int cmp_bucket(const void *x, const void *y) {
    const BucketRef *a = x, *b = y;
    if (a->end != b->end) return (a->end > b->end) - (a->end < b->end);
    return (a->kind > b->kind) - (a->kind < b->kind);
}

/* records(prefix, horizon, per_command) -> (commands, cooldowns, event_ids): the packed MSET,
 * RPUSH and ZADD commands of _rebuild_pool._write_records for the records whose index bucket
 * ends after `horizon` (_rebuild_pool.live_records), in its order, and how many of each. */
static PyObject *core_records(Core *c, PyObject *args) {
    const char *prefix;
    Py_ssize_t plen, per;
    long long horizon;
    if (!PyArg_ParseTuple(args, "s#Ln", &prefix, &plen, &horizon, &per)) return NULL;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    /* the cooldowns, in PairTable.items() order */
    OMap all;
    if (omap_init(&all) < 0) { Py_DECREF(out); return PyErr_NoMemory(); }
    Pairs *t = &c->pairs;
    int bad = 0;
    for (size_t r = 0; r < t->run_count && !bad; r++) {
        Run *run = &t->runs[t->run_head + r];
        for (size_t k = 0; k < run->n && !bad; k++) bad = omap_put(&all, run->keys[k], run->stamps[k]) < 0;
    }
    OMap *maps[2] = {t->old, t->fresh};
    for (int m = 0; m < 2 && !bad; m++)
        for (size_t k = 0; k < maps[m]->count && !bad; k++)
            bad = omap_put(&all, maps[m]->keys[k], maps[m]->vals[k]) < 0;
    Buf pairs = {0}, keysbuf[2] = {{0}, {0}};
    size_t *pair_ends = NULL, *key_ends[2] = {NULL, NULL};
    int64_t *key_bucket[2] = {NULL, NULL};
    size_t nkeys[2] = {0, 0};
    OMap bucket_seq[2];
    int inited = 0;
    if (bad || omap_init(&bucket_seq[0]) < 0 || omap_init(&bucket_seq[1]) < 0) goto nomem;
    inited = 1;
    size_t cap_keys[2] = {all.count + 1, c->ids.live + 1};
    for (int k = 0; k < 2; k++) {
        key_ends[k] = malloc(cap_keys[k] * sizeof(size_t));
        key_bucket[k] = malloc(cap_keys[k] * sizeof(int64_t));
        if (!key_ends[k] || !key_bucket[k]) goto nomem;
    }
    pair_ends = malloc(2 * (all.count + c->ids.live + 1) * sizeof(size_t));
    if (!pair_ends) goto nomem;
    size_t npairs = 0;
    char tsbuf[24], digest[16];
    Names *nm = &c->names;
    /* cooldown records: MSET key ts */
    for (size_t k = 0; k < all.count; k++) {
        int64_t ts = all.vals[k];
        int64_t end = due_bucket_end(ts);
        if (!(end > horizon)) continue;
        Player *pa = &c->players[all.keys[k] >> 32], *pb = &c->players[all.keys[k] & 0xffffffffu];
        const char *a = nm->bytes + nm->off[pa->name], *b = nm->bytes + nm->off[pb->name];
        size_t la = nm->len[pa->name], lb = nm->len[pb->name];
        char mid[32];
        int nmid = snprintf(mid, sizeof(mid), "cd:%zu:", utf8_chars(a, la));
        size_t key_n = (size_t)plen + (size_t)nmid + la + lb;
        size_t before = keysbuf[0].n;
        buf_fmt(&keysbuf[0], "$%lld\r\n", (long long)key_n);
        buf_put(&keysbuf[0], prefix, (size_t)plen);
        buf_put(&keysbuf[0], mid, (size_t)nmid);
        buf_put(&keysbuf[0], a, la);
        buf_put(&keysbuf[0], b, lb);
        buf_put(&keysbuf[0], "\r\n", 2);
        buf_put(&pairs, keysbuf[0].b + before, keysbuf[0].n - before);
        pair_ends[npairs++] = pairs.n;
        int nts = snprintf(tsbuf, sizeof(tsbuf), "%lld", (long long)ts);
        bulk3(&pairs, tsbuf, (size_t)nts, NULL, 0, NULL, 0);
        pair_ends[npairs++] = pairs.n;
        key_ends[0][nkeys[0]] = keysbuf[0].n;
        key_bucket[0][nkeys[0]++] = end;
        if (!omap_get(&bucket_seq[0], (uint64_t)end)) {
            if (omap_put(&bucket_seq[0], (uint64_t)end, (int64_t)bucket_seq[0].count) < 0) goto nomem;
        }
    }
    size_t cooldowns = nkeys[0];
    if (pairs.failed || keysbuf[0].failed) goto nomem;
    if (variadic(out, "$4\r\nMSET\r\n", 10, 1, &pairs, pair_ends, npairs, 2 * (size_t)per) < 0)
        goto fail;
    /* event-id records: MSET key digest */
    pairs.n = 0;
    npairs = 0;
    Buf text = {0};
    for (int32_t x = c->ids.first; x >= 0; x = c->ids.e[x].next) {
        Eid *e = &c->ids.e[x];
        int64_t end = due_bucket_end(e->ts);
        if (!(end > horizon)) continue;
        const char *arena = nm->bytes + nm->off[e->arena], *a = nm->bytes + nm->off[e->attacker];
        const char *v = nm->bytes + nm->off[e->victim];
        size_t larena = nm->len[e->arena], la = nm->len[e->attacker], lv = nm->len[e->victim];
        text.n = 0;
        buf_fmt(&text, "%lld:", (long long)utf8_chars(arena, larena));
        buf_put(&text, arena, larena);
        buf_fmt(&text, "%lld:", (long long)utf8_chars(a, la));
        buf_put(&text, a, la);
        buf_put(&text, v, lv);
        buf_fmt(&text, ":%lld", (long long)e->ts);
        if (text.failed) { free(text.b); goto nomem; }
        blake2b64_hex((const uint8_t *)text.b, text.n, digest);
        size_t before = keysbuf[1].n;
        bulk3(&keysbuf[1], prefix, (size_t)plen, "eid:", 4, e->id, e->len);
        buf_put(&pairs, keysbuf[1].b + before, keysbuf[1].n - before);
        pair_ends[npairs++] = pairs.n;
        bulk3(&pairs, digest, 16, NULL, 0, NULL, 0);
        pair_ends[npairs++] = pairs.n;
        key_ends[1][nkeys[1]] = keysbuf[1].n;
        key_bucket[1][nkeys[1]++] = end;
        if (!omap_get(&bucket_seq[1], (uint64_t)end)) {
            if (omap_put(&bucket_seq[1], (uint64_t)end, (int64_t)bucket_seq[1].count) < 0) {
                free(text.b);
                goto nomem;
            }
        }
    }
    free(text.b);
    size_t event_ids = nkeys[1];
    if (pairs.failed || keysbuf[1].failed) goto nomem;
    if (variadic(out, "$4\r\nMSET\r\n", 10, 1, &pairs, pair_ends, npairs, 2 * (size_t)per) < 0)
        goto fail;
    /* RPUSH of each bucket's keys, buckets ascending, cooldown ones first; then ZADD due */
    for (int kind = 0; kind < 2; kind++) {
        size_t nb = bucket_seq[kind].count;
        size_t *counts = calloc(nb + 1, sizeof(size_t));
        BucketRef *refs = malloc((nb + 1) * sizeof(BucketRef));
        if (!counts || !refs) { free(counts); free(refs); goto nomem; }
        for (size_t k = 0; k < nb; k++) {
            refs[k].end = (int64_t)bucket_seq[kind].keys[k];
            refs[k].kind = (uint32_t)kind;
            refs[k].seq = (uint32_t)k;
        }
        qsort(refs, nb, sizeof(BucketRef), cmp_bucket); /* buckets ascending by end */
        /* gather each bucket's keys in record order */
        size_t *bucket_of = malloc((nkeys[kind] + 1) * sizeof(size_t));
        size_t *start = calloc(nb + 1, sizeof(size_t));
        size_t *fill = calloc(nb + 1, sizeof(size_t));
        size_t *members = malloc((nkeys[kind] + 1) * sizeof(size_t));
        if (!bucket_of || !start || !fill || !members) {
            free(counts); free(refs); free(bucket_of); free(start); free(fill); free(members);
            goto nomem;
        }
        for (size_t k = 0; k < nkeys[kind]; k++) {
            bucket_of[k] = (size_t)*omap_get(&bucket_seq[kind], (uint64_t)key_bucket[kind][k]);
            counts[bucket_of[k]]++;
        }
        for (size_t k = 1; k < nb; k++) start[k] = start[k - 1] + counts[k - 1];
        for (size_t k = 0; k < nkeys[kind]; k++) members[start[bucket_of[k]] + fill[bucket_of[k]]++] = k;
        int err = 0;
        for (size_t r = 0; r < nb && !err; r++) {
            size_t bpos = refs[r].seq;
            Buf items = {0};
            size_t *item_ends = malloc((counts[bpos] + 1) * sizeof(size_t));
            if (!item_ends) { err = 1; PyErr_NoMemory(); break; }
            for (size_t q = 0; q < counts[bpos]; q++) {
                size_t k = members[start[bpos] + q];
                size_t from = k ? key_ends[kind][k - 1] : 0;
                buf_put(&items, keysbuf[kind].b + from, key_ends[kind][k] - from);
                item_ends[q] = items.n;
            }
            Buf head = {0};
            buf_put(&head, "$5\r\nRPUSH\r\n", 11);
            char endtxt[24];
            int nend = snprintf(endtxt, sizeof(endtxt), "%lld", (long long)refs[r].end);
            bulk3(&head, prefix, (size_t)plen, kind ? "id_due:" : "cd_due:", 7, endtxt,
                  (size_t)nend);
            if (items.failed || head.failed) {
                err = 1;
                PyErr_NoMemory();
            } else if (variadic(out, head.b, head.n, 2, &items, item_ends, counts[bpos],
                                (size_t)per) < 0) {
                err = 1;
            }
            free(items.b);
            free(head.b);
            free(item_ends);
        }
        free(counts); free(refs); free(bucket_of); free(start); free(fill); free(members);
        if (err) goto fail;
    }
    /* ZADD due e e ... over the union of both kinds' bucket ends, ascending */
    {
        size_t na = bucket_seq[0].count, nb2 = bucket_seq[1].count;
        int64_t *ends = malloc((na + nb2 + 1) * sizeof(int64_t));
        if (!ends) goto nomem;
        for (size_t k = 0; k < na; k++) ends[k] = (int64_t)bucket_seq[0].keys[k];
        for (size_t k = 0; k < nb2; k++) ends[na + k] = (int64_t)bucket_seq[1].keys[k];
        qsort(ends, na + nb2, sizeof(int64_t), cmp_i64);
        size_t u = 0;
        for (size_t k = 0; k < na + nb2; k++)
            if (u == 0 || ends[u - 1] != ends[k]) ends[u++] = ends[k];
        Buf items = {0}, head = {0};
        size_t *item_ends = malloc((2 * u + 1) * sizeof(size_t));
        if (!item_ends) { free(ends); goto nomem; }
        for (size_t k = 0; k < u; k++) {
            bulk_int(&items, ends[k]);
            item_ends[2 * k] = items.n;
            bulk_int(&items, ends[k]);
            item_ends[2 * k + 1] = items.n;
        }
        buf_put(&head, "$4\r\nZADD\r\n", 10);
        bulk3(&head, prefix, (size_t)plen, "due", 3, NULL, 0);
        int err = items.failed || head.failed;
        if (err) PyErr_NoMemory();
        else if (variadic(out, head.b, head.n, 2, &items, item_ends, 2 * u, 2 * (size_t)per) < 0)
            err = 1;
        free(items.b); free(head.b); free(item_ends); free(ends);
        if (err) goto fail;
    }
    free(pairs.b); free(keysbuf[0].b); free(keysbuf[1].b); free(pair_ends);
    for (int k = 0; k < 2; k++) { free(key_ends[k]); free(key_bucket[k]); }
    omap_free(&all); omap_free(&bucket_seq[0]); omap_free(&bucket_seq[1]);
    return Py_BuildValue("(Nnn)", out, (Py_ssize_t)cooldowns, (Py_ssize_t)event_ids);
nomem:
    PyErr_NoMemory();
fail:
    free(pairs.b); free(keysbuf[0].b); free(keysbuf[1].b); free(pair_ends);
    for (int k = 0; k < 2; k++) { free(key_ends[k]); free(key_bucket[k]); }
    omap_free(&all);
    if (inited) { omap_free(&bucket_seq[0]); omap_free(&bucket_seq[1]); }
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef core_methods[] = {
    {"feed", (PyCFunction)core_feed, METH_VARARGS, "decode a consume() batch from an index"},
    {"push", (PyCFunction)core_push, METH_VARARGS, "buffer an event the Python decoder took"},
    {"buffered", (PyCFunction)core_buffered, METH_O, "events buffered for a partition"},
    {"merge", (PyCFunction)core_merge, METH_O, "merge by event time and rate what is final"},
    {"result", (PyCFunction)core_result, METH_NOARGS, "counters, watermarks, snapshot"},
    {"players", (PyCFunction)core_players, METH_NOARGS, "every player's state, by id"},
    {"cooldowns", (PyCFunction)core_cooldowns, METH_NOARGS, "the pair table's entries"},
    {"event_ids", (PyCFunction)core_event_ids, METH_NOARGS, "the remembered event ids"},
    {"records", (PyCFunction)core_records, METH_VARARGS, "the live records as packed commands"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "adr_cli._rebuild_core.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "adr rebuild's native batch core (docs/native.md)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)core_init,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_methods = core_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rebuild_core",
                                    "adr rebuild's native batch core", -1, NULL};

PyMODINIT_FUNC PyInit__rebuild_core(void) {
    if (PyType_Ready(&CoreType) < 0) return NULL;
    s_error = PyUnicode_InternFromString("error");
    s_value = PyUnicode_InternFromString("value");
    s_key = PyUnicode_InternFromString("key");
    s_partition = PyUnicode_InternFromString("partition");
    s_offset = PyUnicode_InternFromString("offset");
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
