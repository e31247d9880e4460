// Reads kill events as JSON lines on stdin and publishes each as kill event v1
// (schemas/kill_event.md) to $ADR_TOPIC (default kill-events) on $KAFKA_BOOTSTRAP_SERVERS,
// keyed by arena. librdkafka: enable.idempotence + acks=all, and partitioner=murmur2_random
// (the Java client's partitioner; librdkafka's default, consistent_random, is CRC32 and puts
// an arena on another partition than Java, Go or Python publishers would).
// Exits 0 once every message is acknowledged, 1 otherwise (after $ADR_DELIVERY_TIMEOUT_MS,
// default 30000), 2 on bad input: a line that is not a kill event, or one the consumer would
// dead-letter (an id over 64 bytes, a self-kill, ts outside [now - 7 days, now + 60 s] of
// $ADR_NOW_MS or the clock; check()).
// With --hex it only encodes: one hex line per event on stdout (tested against schemas/vectors).
#include <librdkafka/rdkafkacpp.h>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

struct KillEvent {
  std::string id, arena, attacker, victim;
  std::int64_t ts;  // milliseconds since the Unix epoch: an integer, never a double
};

// A map with string keys, in the Python encoder's order. Not MSGPACK_DEFINE: that writes the
// struct as an array, which the consumer rejects (not_a_map).
std::string encode(const KillEvent& e) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(&buf);
  pk.pack_map(6);
  pk.pack(std::string("v"));        pk.pack(1);
  pk.pack(std::string("id"));       pk.pack(e.id);  // std::string -> str (a vector<char> would be bin)
  pk.pack(std::string("arena"));    pk.pack(e.arena);
  pk.pack(std::string("attacker")); pk.pack(e.attacker);
  pk.pack(std::string("victim"));   pk.pack(e.victim);
  pk.pack(std::string("ts"));       pk.pack(e.ts);   // shortest int form, unsigned when >= 0
  return std::string(buf.data(), buf.size());
}

KillEvent parse(const std::string& line) {
  const auto j = nlohmann::json::parse(line);
  const auto& ts = j.at("ts");
  if (!ts.is_number_integer()) throw std::runtime_error("ts must be an integer of milliseconds");
  KillEvent e{j.at("id").get<std::string>(), j.at("arena").get<std::string>(),
              j.at("attacker").get<std::string>(), j.at("victim").get<std::string>(),
              ts.get<std::int64_t>()};
  if (e.id.empty() || e.arena.empty() || e.attacker.empty() || e.victim.empty())
    throw std::runtime_error("id, arena, attacker and victim must be non-empty");
  return e;
}

// The consumer's limits (schemas/kill_event.md): every id 1-64 bytes of UTF-8, and ts within
// [now - 7 days, now + 60 s] of the consumer's clock.
constexpr std::size_t kMaxIdBytes = 64;
constexpr std::int64_t kMaxAgeMs = 7LL * 24 * 60 * 60 * 1000;
constexpr std::int64_t kMaxFutureMs = 60 * 1000;

// The clock ts is judged against: $ADR_NOW_MS when set (the tests judge schemas/vectors at the
// file's now_ms, as `adr check --now-ms` does), else this machine's.
std::int64_t now_ms() {
  if (const char* v = std::getenv("ADR_NOW_MS"); v && *v) return std::stoll(v);
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Refuses what the consumer would dead-letter, so it is never published: an id over 64 bytes
// (bad_id), attacker == victim (self_kill), ts outside the window (ts_out_of_range).
void check(const KillEvent& e, std::int64_t now) {
  for (const auto* f : {&e.id, &e.arena, &e.attacker, &e.victim}) {
    if (f->size() > kMaxIdBytes)
      throw std::runtime_error("an id is " + std::to_string(f->size()) +
                               " bytes, at most 64 bytes of UTF-8 (bad_id)");
  }
  if (e.attacker == e.victim)
    throw std::runtime_error("attacker and victim are both \"" + e.attacker +
                             "\": a self-kill is not sent (self_kill)");
  if (e.ts < now - kMaxAgeMs || e.ts > now + kMaxFutureMs)
    throw std::runtime_error("ts " + std::to_string(e.ts) +
                             " is outside [now - 7 days, now + 60 s]: milliseconds? (ts_out_of_range)");
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

class Reports : public RdKafka::DeliveryReportCb {
 public:
  long delivered = 0, failed = 0;
  void dr_cb(RdKafka::Message& m) override {
    if (m.err() == RdKafka::ERR_NO_ERROR) {
      ++delivered;
    } else if (++failed <= 5) {
      std::cerr << "publish: not delivered: " << m.errstr() << "\n";
    }
  }
};

void set(RdKafka::Conf& conf, const std::string& key, const std::string& value) {
  std::string err;
  if (conf.set(key, value, err) != RdKafka::Conf::CONF_OK) throw std::runtime_error(err);
}

}  // namespace

int main(int argc, char** argv) {
  const bool hex_only = argc > 1 && std::string(argv[1]) == "--hex";
  const std::string topic = env("ADR_TOPIC", "kill-events");
  Reports reports;
  std::unique_ptr<RdKafka::Producer> producer;
  if (!hex_only) {
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    try {
      set(*conf, "bootstrap.servers", env("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"));
      set(*conf, "enable.idempotence", "true");
      set(*conf, "acks", "all");
      set(*conf, "partitioner", "murmur2_random");
      set(*conf, "linger.ms", "5");
      // How long a message may take to be acknowledged, retries included, before it fails.
      set(*conf, "message.timeout.ms", env("ADR_DELIVERY_TIMEOUT_MS", "30000"));
      std::string err;
      if (conf->set("dr_cb", &reports, err) != RdKafka::Conf::CONF_OK) throw std::runtime_error(err);
      producer.reset(RdKafka::Producer::create(conf.get(), err));
      if (!producer) throw std::runtime_error(err);
    } catch (const std::exception& ex) {
      std::cerr << "publish: " << ex.what() << "\n";
      return 1;
    }
  }
  long sent = 0, line_no = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string value;
    KillEvent e;
    try {
      e = parse(line);
      check(e, now_ms());
      value = encode(e);
    } catch (const std::exception& ex) {
      std::cerr << "publish: line " << line_no << ": " << ex.what() << "\n";
      return 2;
    }
    if (hex_only) {
      std::cout << to_hex(value) << "\n";
      continue;
    }
    for (;;) {
      auto err = producer->produce(topic, RdKafka::Topic::PARTITION_UA,
                                   RdKafka::Producer::RK_MSG_COPY, value.data(), value.size(),
                                   e.arena.data(), e.arena.size(), 0, nullptr);
      if (err == RdKafka::ERR_NO_ERROR) break;
      if (err != RdKafka::ERR__QUEUE_FULL) {
        std::cerr << "publish: " << RdKafka::err2str(err) << "\n";
        return 1;
      }
      producer->poll(50);  // queue full: serve delivery reports, then retry
    }
    ++sent;
    producer->poll(0);
  }
  if (hex_only) return 0;
  producer->flush(std::stoi(env("ADR_DELIVERY_TIMEOUT_MS", "30000")) + 5000);
  const long undelivered = sent - reports.delivered - reports.failed;
  if (reports.failed || undelivered) {
    std::cerr << "publish: " << reports.failed + undelivered << " of " << sent
              << " not delivered\n";
    return 1;
  }
  std::cerr << "publish: " << sent << " delivered to " << topic << "\n";
  return 0;
}
