"""Local Kafka (KRaft, jars from Maven Central) and redis-server without Docker.

``adr stack up|down|status`` runs them for people; :class:`SessionServers` finds or starts them
for test sessions; ``adr demo`` runs the whole pipeline on them (demo.py). Public modules for
tests: testing.py (the pytest fixtures tests/conftest.py imports), secured.py (TLS, Sentinel
and Cluster deployments of Redis) and loading.py (a durable redis-server held in LOADING after
a restart, for the consumer's and the tier job's LOADING tests).

Exceptions: `StackError` (root and only one: a server that cannot be provisioned or started).
"""

from stack._endpoints import SessionServers, docker_answers
from stack._errors import StackError
from stack._kafka import KafkaBroker, prepare_kafka
from stack._local import LocalStack
from stack._ports import free_port
from stack._provision import kafka_lib_dir, kafka_version, redis_server_bin
from stack._redis import RedisServer
from stack._topics import TopicAdmin

__all__ = [
    "KafkaBroker",
    "LocalStack",
    "RedisServer",
    "SessionServers",
    "StackError",
    "TopicAdmin",
    "docker_answers",
    "free_port",
    "kafka_lib_dir",
    "kafka_version",
    "prepare_kafka",
    "redis_server_bin",
]
