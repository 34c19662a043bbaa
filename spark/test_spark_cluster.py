#!/usr/bin/env python3
"""The Spark job on a real standalone cluster (one Master, two Workers, started with spark-class
on localhost), over an archive made here: the corpus fixtures and sample captures in nested
folders (gzip, pcapng), Zeek's no_crlf trace split into 76 pieces (a rotated set across one
connection), and a corrupt capture. Checks: the Parquet rows equal `icy-sniff -r ARCHIVE --format
ndjson`'s transactions field by field, the rotated set gives the whole trace's 5 transactions,
the corrupt file is in failures, a second run commits nothing new, and DuckDB and pyarrow read the
Parquet back. Prints "spark-test: OK ..." and exits 0, or says what differs and exits 1.

    python3 spark/test_spark_cluster.py --icy-sniff .build/release/icy-sniff [--keep DIR]
"""
import argparse, gzip, json, os, shutil, socket, struct, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port, seconds, process=None):
    """Waits until something accepts connections on 127.0.0.1:port: True; False when `seconds`
    pass first or `process` (the server being waited for) ends."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        if process is not None and process.poll() is not None:
            return False
        time.sleep(0.1)
    return False


# The work folder `begin` made (None with --keep: the caller's, left as it is).
_made_work = None


def report(name, failures, ok):
    """A test script's last line and exit status: `name: FAILED` and what differs (1), with the
    work folder kept to look into; or `name: OK` and `ok` (0), the work folder removed."""
    if failures:
        print(f"{name}: FAILED\n" + "\n".join(failures) + (f"\n(work folder kept: {_made_work})" if _made_work else ""))
        return 1
    if _made_work:
        shutil.rmtree(_made_work, ignore_errors=True)
    print(f"{name}: OK {ok}")
    return 0


def split_pcap(data, every, folder, stem):
    """editcap -c: pieces of `every` packets named stem_NNNNN_YYYYMMDDhhmmss.pcap."""
    header, off, pieces, current, first, n = data[:24], 24, 0, bytearray(), None, 0
    def flush():
        nonlocal pieces, current, first, n
        if n:
            name = f"{stem}_{pieces:05d}_{time.strftime('%Y%m%d%H%M%S', time.gmtime(first))}.pcap"
            open(os.path.join(folder, name), "wb").write(header + current)
            pieces, current, first, n = pieces + 1, bytearray(), None, 0
    while off + 16 <= len(data):
        sec, _, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        if first is None: first = sec
        current += data[off:off + 16 + incl]
        off += 16 + incl
        n += 1
        if n == every: flush()
    flush()
    return pieces


# Secrets planted in one HTTP/1.1 exchange (issue 30): none may reach the Parquet rows.
SECRETS = ["hunter2pw", "keyv4lue", "s3cr3tcookie", "t0ps3cr3t", "reft0ken", "setc00kie", "s1gvalue"]


def secrets_pcap(path):
    """One HTTP/1.1 exchange carrying the planted secrets, as Ethernet/IPv4/TCP in pcap."""
    request = (b"GET /index.html?password=hunter2pw&key=keyv4lue&q=ok HTTP/1.1\r\nHost: h.example\r\n"
               b"Cookie: sid=s3cr3tcookie\r\nAuthorization: Bearer t0ps3cr3t\r\n"
               b"Referer: http://h.example/start?token=reft0ken\r\n\r\n")
    response = (b"HTTP/1.1 302 Found\r\nSet-Cookie: sess=setc00kie; Path=/\r\n"
                b"Location: /next?sig=s1gvalue&page=2\r\nContent-Length: 0\r\n\r\n")
    client, server = 0x0A000002, 0x0A000001
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    t = [1_700_000_000, 0]

    def seg(src, sport, dst, dport, seq, ack, flags, payload=b""):
        t[1] += 1000
        ip = struct.pack(">BBHHHBBHII", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 0x50, flags, 65535, 0, 0)
        frame = b"\0" * 12 + b"\x08\x00" + ip + tcp + payload
        out.append(struct.pack("<IIII", t[0], t[1], len(frame), len(frame)) + frame)

    seg(client, 40000, server, 80, 100, 0, 0x02)
    seg(server, 80, client, 40000, 500, 101, 0x12)
    seg(client, 40000, server, 80, 101, 501, 0x10)
    seg(client, 40000, server, 80, 101, 501, 0x18, request)
    seg(server, 80, client, 40000, 501, 101 + len(request), 0x18, response)
    seg(client, 40000, server, 80, 101 + len(request), 501 + len(response), 0x11)
    seg(server, 80, client, 40000, 501 + len(response), 102 + len(request), 0x11)
    open(path, "wb").write(b"".join(out))


def make_archive(root):
    fixtures = os.path.join(ROOT, "Tests/Fixtures/corpus")
    for sub in ("zeek", "pcap2har"):
        shutil.copytree(os.path.join(fixtures, sub), os.path.join(root, "corpus", sub),
                        ignore=shutil.ignore_patterns("*.md", "LICENSE*"))
    os.makedirs(os.path.join(root, "samples"))
    for name in os.listdir(os.path.join(ROOT, "captures")):
        if ".pcap" in name:
            shutil.copy(os.path.join(ROOT, "captures", name), os.path.join(root, "samples", name))
    secrets_pcap(os.path.join(root, "samples", "secrets.pcap"))
    ring = os.path.join(root, "ring", "2021-01-06")
    os.makedirs(ring)
    whole = gzip.open(os.path.join(fixtures, "zeek/no_crlf.pcap.gz")).read()
    split_pcap(whole, 20, ring, "split")
    os.makedirs(os.path.join(root, "broken"))
    # A pcap magic number and then nothing a reader can use: recognised as a capture, unreadable.
    open(os.path.join(root, "broken", "corrupt.pcap"), "wb").write(bytes.fromhex("d4c3b2a1") + os.urandom(6))
    return sum(len(files) for _, _, files in os.walk(root))


def start_cluster(spark_home, work, workers=2):
    os.makedirs(work, exist_ok=True)
    port = free_port()
    env = dict(os.environ, SPARK_LOG_DIR=work, SPARK_WORKER_DIR=os.path.join(work, "worker"), SPARK_LOCAL_IP="127.0.0.1")
    cls = os.path.join(spark_home, "bin", "spark-class")
    log = open(os.path.join(work, "cluster.log"), "w")
    procs = [subprocess.Popen([cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                               "--webui-port", str(free_port())], env=env, stdout=log, stderr=subprocess.STDOUT)]
    url = f"spark://127.0.0.1:{port}"
    listening(port, 600, procs[0])
    for _ in range(workers):
        procs.append(subprocess.Popen([cls, "org.apache.spark.deploy.worker.Worker", url, "--cores", "1", "--memory", "1g",
                                       "--webui-port", str(free_port()), "--host", "127.0.0.1"],
                                      env=env, stdout=log, stderr=subprocess.STDOUT))
    # Wait until both workers have registered with the master.
    for _ in range(1200):
        text = open(os.path.join(work, "cluster.log")).read()
        if text.count("Registering worker") >= workers: break
        time.sleep(0.5)
    else:
        raise SystemExit("spark-test: the workers did not register:\n" + open(os.path.join(work, "cluster.log")).read()[-3000:])
    return url, procs, env


FLOATS = {"time_ms", "dns_ms", "connect_ms", "send_ms", "wait_ms", "receive_ms", "cache_lifetime", "cache_age",
          "cache_fresh_for", "ssl_ms"}


def normalise(obj):
    """An NDJSON transaction as the job's schema stores it (the fields both have)."""
    out = {}
    for k, v in obj.items():
        if k == "ts":
            v = v[:-1]  # "...Z" → naive UTC, as pyarrow gives the timestamp back
        elif k in FLOATS and v is not None:
            v = round(float(v), 3)
        out[k] = v
    out.setdefault("pushed", False)
    out.setdefault("stream", None)
    return out


def differences(expected, rows):
    """icy-sniff's NDJSON transactions against the job's Parquet rows, field by field: [] when
    equal, else a sentence saying how they differ."""
    def present(d):
        return {k: v for k, v in d.items() if v is not None and not (k == "pushed" and v is False)}
    # Estimated exchanges (`"inferred": true`) and encrypted connections' rows (`"type"`) are not
    # transactions: the job leaves them out.
    want = sorted(json.dumps(present(normalise(e)), sort_keys=True) for e in expected if not e.get("inferred") and not e.get("type"))
    got = []
    for r in rows:
        r = {k: v for k, v in r.items() if k not in ("set_id", "set_name", "schema_version", "capture_date")}
        r["ts"] = r["ts"].strftime("%Y-%m-%dT%H:%M:%S.%f")
        got.append(json.dumps(present({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}), sort_keys=True))
    got.sort()
    if got == want:
        return []
    missing, extra = set(want) - set(got), set(got) - set(want)
    return [f"Parquet rows differ from icy-sniff's NDJSON: {len(want)} expected, {len(got)} rows; "
            f"e.g. missing {sorted(missing)[:1]} extra {sorted(extra)[:1]}"]


def begin(prefix):
    """A Spark test's start: its arguments (--icy-sniff BINARY [--keep DIR]), the lowest CPU
    priority, and its work folder. Answers (binary, SPARK_HOME, work folder)."""
    # Run beside the rest of `swift test` without slowing it: the JVMs take two cores' worth of
    # CPU, which pushed time-limited tests over their limits. At the lowest priority Spark mostly
    # runs once the other tests are done (hence the patient waits).
    os.nice(19)
    ap = argparse.ArgumentParser()
    ap.add_argument("--icy-sniff", required=True)
    ap.add_argument("--keep")
    a = ap.parse_args()
    import pyspark
    global _made_work
    work = a.keep or tempfile.mkdtemp(prefix=prefix)
    _made_work = None if a.keep else work
    os.makedirs(work, exist_ok=True)
    return os.path.abspath(a.icy_sniff), os.path.dirname(pyspark.__file__), work


def main():
    binary, spark_home, work = begin("icy-spark-")
    import pyarrow.parquet as pq
    archive, out = os.path.join(work, "archive"), os.path.join(work, "out")
    shutil.rmtree(archive, ignore_errors=True); shutil.rmtree(out, ignore_errors=True)
    files = make_archive(archive)
    started = time.time()
    url, procs, env = start_cluster(spark_home, work)
    failures = []
    try:
        submit = [os.path.join(spark_home, "bin", "spark-submit"), "--master", url, "--conf", "spark.ui.enabled=false",
                  os.path.join(ROOT, "spark/icy_sniff_spark.py"), "--input", archive, "--output", out, "--icy-sniff", binary]
        first = subprocess.run(submit, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if first.returncode != 0:
            raise SystemExit("spark-test: spark-submit failed:\n" + first.stderr[-4000:])
        job_seconds = time.time() - started
        second = subprocess.run(submit, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if "0 to run" not in second.stderr + second.stdout:
            lines = [l for l in (second.stdout + second.stderr).splitlines() if "icy-sniff on Spark" in l or "Error" in l or "Traceback" in l]
            failures.append("the second run was not a no-op: " + "\n".join(lines or second.stderr.splitlines()[-20:]))
    finally:
        for p in procs: p.terminate()
        for p in procs: p.wait()

    # What icy-sniff itself says about the same archive.
    local = subprocess.run([binary, "-r", archive, "--format", "ndjson"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    table = pq.read_table(os.path.join(out, "transactions"))
    rows = table.to_pylist()
    failures += differences([json.loads(l) for l in local.stdout.splitlines() if l.strip()], rows)
    planted = [r for r in rows if r["set_name"] == "samples/secrets"]
    if len(planted) != 1:
        failures.append(f"the capture with planted secrets gave {len(planted)} rows, not 1")
    shown = sorted({s for r in rows for s in SECRETS if s in json.dumps(r, default=str)})
    if shown:
        failures.append(f"Parquet rows show planted secrets: {shown}")
    ring = [r for r in rows if r["set_name"] == "ring/2021-01-06/split"]
    if len(ring) != 5 or any(r["flags"] for r in ring):
        failures.append(f"the rotated set gave {len(ring)} transactions (flags {[r['flags'] for r in ring]}), not 5 whole ones")
    fails = pq.read_table(os.path.join(out, "failures")).to_pylist()
    if not any(f["capture"].endswith("broken/corrupt.pcap") and f["kind"] == "failed" for f in fails):
        failures.append(f"the corrupt capture is not in failures: {fails}")
    import pyarrow as pa
    types = {f: table.schema.field(f).type for f in ("ts", "flags", "status", "time_ms", "capture_date")}
    if not (pa.types.is_timestamp(types["ts"]) and pa.types.is_list(types["flags"]) and pa.types.is_integer(types["status"])
            and pa.types.is_floating(types["time_ms"])):
        failures.append(f"schema: {types}")
    try:
        import duckdb
        n = duckdb.sql(f"select count(*) from read_parquet('{out}/transactions/**/*.parquet', hive_partitioning = true)").fetchall()[0][0]
        if n != len(rows): failures.append(f"DuckDB reads {n} rows, pyarrow {len(rows)}")
    except ImportError:
        pass
    return report("spark-test", failures, f"{files} files, {len(rows)} transactions, {len(fails)} failures, "
                  f"job {job_seconds:.0f} s, second run a no-op (cluster: 1 master, 2 workers at {url})")


if __name__ == "__main__":
    sys.exit(main())
