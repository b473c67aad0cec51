"""Hostile: tries to reach the network, records what happened, and plays on (expected: every attempt fails).

Attempts: a DNS lookup, the Docker host gateway, a public address, PostgreSQL and Redis on 127.0.0.1.
Safety: connections to non-loopback addresses are only attempted when the only network interface is the
loopback (so no packet can leave this sandbox); otherwise the interfaces are reported and nothing is tried.
"""

import json
import os
import socket
import sys

LOOPBACK_TARGETS = [("127.0.0.1", 5432), ("127.0.0.1", 6379)]
OUTSIDE_TARGETS = [("172.17.0.1", 80), ("192.0.2.1", 80)]  # Docker's default gateway; TEST-NET-1


def interfaces():
    try:
        return sorted(os.listdir("/sys/class/net"))
    except OSError:
        with open("/proc/net/dev") as handle:
            return sorted(line.split(":")[0].strip() for line in handle.readlines()[2:])


def attempt(host, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(0.5)
    try:
        sock.connect((host, port))
        return "CONNECTED"
    except OSError as exc:
        return type(exc).__name__ + ": " + str(exc.strerror or exc)
    finally:
        sock.close()


class Player:
    def __init__(self, train_mode=False):
        report = {"interfaces": interfaces(), "attempts": {}}
        try:
            socket.setdefaulttimeout(1.0)
            report["attempts"]["dns example.com"] = "RESOLVED " + repr(
                socket.getaddrinfo("example.com", 80)[:1]
            )
        except OSError as exc:
            report["attempts"]["dns example.com"] = type(exc).__name__ + ": " + str(exc)
        for host, port in LOOPBACK_TARGETS:
            report["attempts"][f"{host}:{port}"] = attempt(host, port)
        if report["interfaces"] == ["lo"]:
            for host, port in OUTSIDE_TARGETS:
                report["attempts"][f"{host}:{port}"] = attempt(host, port)
        else:
            report["attempts"]["outside"] = "NOT TRIED: the sandbox has network interfaces"
        print("HOSTILE_REPORT " + json.dumps(report), file=sys.stderr, flush=True)

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
