#!/usr/bin/env python3
"""icy-sniff over a capture archive on Apache Spark.

    spark-submit [--master URL] spark/icy_sniff_spark.py --input URI [URI ...] --output URI
                 [--icy-sniff BINARY] [--keylog FILE|URI]

Spark schedules, retries and ships the binary; the rows never pass through Python objects, the
JVM or the driver:

1. Plan (driver): icy-sniff groups the inputs into capture sets (`icy-sniff --list-sets`: every
   capture on its own, the pieces of a rotated set together, by the same rules as a local batch).
   Inputs on another file system (s3://, s3a://, hdfs://, gs://; pyarrow's file systems) are
   listed there, and icy-sniff plans on a local mirror of each file's first 256 KiB.
2. Skip (driver): a set whose commit marker OUT/sets/set-ID.parquet exists is done.
3. Run (executors; a set is one task's, several small sets may share a task, largest first):
   icy-sniff reads the set's pieces (local paths directly; other file systems streamed into its
   standard input or FIFOs, never copied to disk) and writes NDJSON into a pipe; pyarrow's C++
   JSON reader turns it into Arrow batches with the job's explicit schema, written as Parquet
   into OUT/transactions/capture_date=D/set-ID.parquet. icy-sniff's diagnostics become
   OUT/failures/set-ID.parquet. Each file becomes visible whole (`Output`: renamed from a hidden
   temporary name on a file system; an object store shows an object once its upload completes).
4. Commit (the same task, last): OUT/sets/set-ID.parquet. A set is committed when that file
   exists; a set run again (a retried task, a rerun after a crash) rewrites the same file names.

OUT is a path every executor can write (or file://), or a URI of pyarrow's file systems.
docs/SPARK.md has the schema, the model of what it costs and the figures.
"""
import argparse, hashlib, json, os, shutil, signal, stat, subprocess, sys, tempfile, threading, time, uuid
from datetime import datetime, timezone

SCHEMA_VERSION = 4
# The first bytes of a remote capture that icy-sniff plans on (link type, snapshot length, the
# first packet; a compressed capture's first packets decompress from its first blocks).
PROBE_BYTES = 256 * 1024
# Rows kept per partition before they are written as one Parquet row group.
ROW_GROUP = 65536
TMP_SUFFIX = ".parquet.tmp"


def arrow_schemas():
    """(the NDJSON fields as read, the transactions files' schema, failures, sets). One place."""
    import pyarrow as pa
    s, l, d, b, i = pa.string(), pa.int64(), pa.float64(), pa.bool_(), pa.int32()
    ndjson = [
        # The NDJSON fields of icy-sniff (docs/OUTPUT.md), names kept.
        ("ts", pa.timestamp("us", tz="UTC")), ("capture", s), ("connection", s), ("depth", l),
        ("client_ip", s), ("client_port", i), ("server_ip", s), ("server_port", i),
        ("method", s), ("host", s), ("target", s), ("url", s), ("protocol", s), ("request_version", s),
        ("user_agent", s), ("referrer", s), ("request_body_len", l), ("status", i), ("reason", s),
        ("response_version", s), ("content_type", s), ("content_encoding", s), ("response_body_len", l),
        ("response_encoded_len", l), ("location", s),
        ("time_ms", d), ("dns_ms", d), ("connect_ms", d), ("send_ms", d), ("wait_ms", d), ("receive_ms", d),
        ("cache", s), ("cache_storable", b), ("cache_lifetime", d), ("cache_lifetime_source", s), ("cache_age", d),
        ("cache_fresh_for", d), ("cache_avoidable", b), ("tls_version", s), ("sni", s), ("ssl_ms", d),
        ("stream", l), ("pushed", b), ("flags", pa.list_(s)),
        # schema_version 2: a WebSocket's totals (null for other transactions).
        ("ws_messages_sent", l), ("ws_messages_received", l), ("ws_bytes_sent", l), ("ws_bytes_received", l),
        ("ws_close_code", i),
        # schema_version 4: the link-layer address of the client's device (docs/OUTPUT.md, Devices).
        ("device", s),
    ]
    # Added by the job. capture_date, the partition column, is in the path (capture_date=D), not in
    # the files, as Spark writes a partitioned dataset.
    added = [("set_id", s), ("set_name", s), ("schema_version", i)]
    failures = [("set_id", s), ("set_name", s), ("capture", s), ("kind", s), ("message", s), ("schema_version", i)]
    sets = [("set_id", s), ("set_name", s), ("pieces", pa.list_(s)), ("transactions", l), ("failures", l),
            ("committed", pa.timestamp("us", tz="UTC")), ("schema_version", i)]
    # Read, not stored: an estimate from an encrypted connection's records (docs/OUTPUT.md,
    # "Encrypted exchanges") and the row of an encrypted connection ("type": "connection") are no
    # transactions; their rows are left out of the transactions files.
    read = [("inferred", b), ("type", s)]
    return pa.schema(ndjson + read), pa.schema(ndjson + added), pa.schema(failures), pa.schema(sets)


# -- file systems -------------------------------------------------------------------------------

def is_local(uri):
    return "://" not in uri or uri.startswith("file://")


def local_path(uri):
    return os.path.abspath(uri[len("file://"):] if uri.startswith("file://") else uri)


def filesystem(uri):
    """pyarrow's file system for a URI and the path in it. s3a:// (Hadoop's name) is s3://."""
    from pyarrow import fs
    if uri.startswith("s3a://") or uri.startswith("s3n://"):
        uri = "s3://" + uri.split("://", 1)[1]
    return fs.FileSystem.from_uri(uri)


class Output:
    """The output folder: a path (or file://) every executor can write, or a URI of pyarrow's
    file systems (s3://, s3a://, hdfs://, gs://). Made from the URI on the driver and on each
    executor. One place decides how a file becomes visible whole: on an object store an object
    appears only once its upload completes, so it is written under its own name; on a file
    system it is written under a hidden temporary name and renamed."""

    def __init__(self, uri):
        from pyarrow import fs
        self.uri = uri
        if is_local(uri):
            self.fs, self.root = fs.LocalFileSystem(), local_path(uri)
        else:
            self.fs, root = filesystem(uri)
            self.root = root.rstrip("/")
        self.direct = self.fs.type_name in ("s3", "gcs")

    def path(self, *parts):
        return "/".join((self.root,) + parts)

    def set_file(self, folder, set_id):
        """OUT/folder/set-ID.parquet: a set's rows of one date, its failures, its commit marker."""
        return self.path(folder, f"set-{set_id}.parquet")

    def shown(self, sub):
        return self.uri.rstrip("/") + "/" + sub

    def exists(self, path):
        from pyarrow import fs
        return self.fs.get_file_info(path).type != fs.FileType.NotFound

    def files(self, sub):
        """Every file under OUT/sub (none when it is not there)."""
        from pyarrow import fs
        infos = self.fs.get_file_info(fs.FileSelector(self.path(sub), recursive=True, allow_not_found=True))
        return [i for i in infos if i.type == fs.FileType.File]

    def begin(self, final):
        """Where to write `final`: itself, or a hidden temporary name beside it."""
        folder, name = final.rsplit("/", 1)
        self.fs.create_dir(folder, recursive=True)
        if self.direct:
            return final
        return f"{folder}/.{name[:-len('.parquet')]}.{uuid.uuid4().hex}{TMP_SUFFIX}"

    def commit(self, written, final):
        if written != final:
            self.fs.move(written, final)

    def abandon(self, written):
        try:
            self.fs.delete_file(written)
        except OSError:
            pass


# -- plan (driver) ------------------------------------------------------------------------------

def list_sets(binary, paths):
    cmd = [binary, "--list-sets"]
    for p in paths:
        cmd += ["-r", p]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    sets = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
    problems = [l for l in p.stderr.decode().splitlines() if l.strip()]
    if p.returncode != 0 and not sets:
        raise SystemExit(f"icy-sniff on Spark: {binary} --list-sets failed (status {p.returncode}): "
                         + " ".join(problems[-3:]))
    return sets, problems


def set_id(pieces):
    """A set is identified by its pieces (URI, size, mtime): new or changed captures run again."""
    h = hashlib.sha256()
    for uri, size, mtime in pieces:
        h.update(f"{uri}\0{size}\0{int(mtime)}\0".encode())
    return h.hexdigest()[:32]


def size_and_time(path):
    """(0, 0) for a path that is not there: its set runs, and icy-sniff's message about it is
    a failure row; once the file is there it has a new id and runs again."""
    try:
        st = os.stat(path)
        return st.st_size, st.st_mtime
    except OSError:
        return 0, 0


def plan_local(binary, inputs):
    sets, problems = list_sets(binary, [local_path(i) for i in inputs])
    units = []
    for s in sets:
        pieces = [os.path.abspath(x) for x in s["pieces"]]
        stats = [(p,) + size_and_time(p) for p in pieces]
        units.append({"id": set_id(stats), "name": s["name"], "pieces": pieces, "bytes": sum(st[1] for st in stats)})
    return units, problems


def plan_remote(binary, uri, mirror):
    """The sets of one input on another file system: its files listed there, the first
    PROBE_BYTES of each copied into a local mirror of the same names, icy-sniff's plan of the
    mirror mapped back to the URIs."""
    from concurrent.futures import ThreadPoolExecutor
    from pyarrow import fs
    fsys, root = filesystem(uri)
    info = fsys.get_file_info(root)
    if info.type == fs.FileType.NotFound:
        return [], [f"icy-sniff: error: '{uri}': no such file or directory"]
    if info.type == fs.FileType.Directory:
        files = [f for f in fsys.get_file_info(fs.FileSelector(root, recursive=True)) if f.type == fs.FileType.File]
        base = root.rstrip("/")
    else:
        files, base = [info], os.path.dirname(root)
    prefix = uri.split("://", 1)[0] + "://"

    def probe(f):
        rel = os.path.relpath(f.path, base)
        dest = os.path.join(mirror, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with fsys.open_input_stream(f.path) as src, open(dest, "wb") as out:
            out.write(src.read(PROBE_BYTES))
        return dest, (prefix + f.path, f.size, f.mtime.timestamp() if f.mtime else 0)

    with ThreadPoolExecutor(16) as pool:
        mapping = dict(pool.map(probe, files))
    target = mirror if info.type == fs.FileType.Directory else next(iter(mapping))
    sets, problems = list_sets(binary, [target])
    # Messages name the mirror's paths: say the URIs.
    for local, (remote, _, _) in mapping.items():
        problems = [p.replace(local, remote) for p in problems]
    units = []
    for s in sets:
        stats = [mapping[os.path.abspath(p)] if os.path.abspath(p) in mapping else mapping[p] for p in s["pieces"]]
        units.append({"id": set_id(stats), "name": s["name"], "pieces": [st[0] for st in stats],
                      "bytes": sum(st[1] for st in stats)})
    return units, problems


def plan(binary, inputs):
    """The units of work: icy-sniff's own grouping of the inputs into capture sets."""
    local = [i for i in inputs if is_local(i)]
    units, problems = plan_local(binary, local) if local else ([], [])
    for uri in inputs:
        if not is_local(uri):
            with tempfile.TemporaryDirectory(prefix="icy-spark-plan-") as mirror:
                mirror = os.path.realpath(mirror)
                u, p = plan_remote(binary, uri, mirror)
            units += u
            problems += p
    return units, problems


def committed_sets(out):
    """Sets done by an earlier run: their commit marker OUT/sets/set-ID.parquet exists. Output
    of schema_version 2 (Spark wrote part-*.parquet files): the set_ids in them, and in
    OUT/transactions (a run that stopped between its two commits)."""
    done = set()
    for f in out.files("sets"):
        if f.base_name.startswith("set-") and f.base_name.endswith(".parquet"):
            done.add(f.base_name[len("set-"):-len(".parquet")])
    legacy = [f.path for sub in ("sets", "transactions") for f in out.files(sub)
              if f.base_name.startswith("part-") and f.base_name.endswith(".parquet")]
    if legacy:
        import pyarrow.parquet as pq
        for path in legacy:
            done |= set(pq.read_table(path, columns=["set_id"], filesystem=out.fs).column("set_id").unique().to_pylist())
    return done


def remove_leftovers(out):
    """Temporary files of tasks that died before renaming them (a crashed executor)."""
    for sub in ("transactions", "failures", "sets"):
        for f in out.files(sub):
            if f.base_name.startswith(".") and f.base_name.endswith(TMP_SUFFIX):
                out.abandon(f.path)


# -- run (executor) -----------------------------------------------------------------------------

class Feeder:
    """Streams captures from a file system into icy-sniff: one capture into its standard input,
    the pieces of a set into FIFOs read in turn. Nothing is copied to disk."""

    def __init__(self, uris):
        self.uris, self.error, self.threads, self.dir, self.fifos, self.stopped = uris, None, [], None, [], False

    def args(self):
        if len(self.uris) == 1:
            return ["-r", "-"]
        self.dir = tempfile.mkdtemp(prefix="icy-spark-fifo-")
        self.fifos = []
        for n, uri in enumerate(self.uris):
            path = os.path.join(self.dir, f"{n:06d}-{os.path.basename(uri.split('://', 1)[1])}")
            os.mkfifo(path)
            self.fifos.append(path)
        return [a for f in self.fifos for a in ("-r", f)]

    def names(self):
        """What icy-sniff calls each input → its URI."""
        return {"-": self.uris[0]} if len(self.uris) == 1 else dict(zip(self.fifos, self.uris))

    def start(self, stdin):
        targets = [(self.uris[0], stdin)] if len(self.uris) == 1 else list(zip(self.uris, self.fifos))

        def copy():
            for uri, dest in targets:
                if self.stopped:
                    break
                out = None
                try:
                    # A FIFO opens once icy-sniff opens it to read; closed, icy-sniff sees its end.
                    out = open(dest, "wb") if isinstance(dest, str) else dest
                    fsys, path = filesystem(uri)
                    with fsys.open_input_stream(path) as src:
                        shutil.copyfileobj(src, out, 1 << 20)
                except BrokenPipeError:
                    pass  # icy-sniff stopped reading (it says why on stderr)
                except OSError as e:
                    self.error = (uri, f"'{uri}': {e}")
                finally:
                    try:
                        if out is not None:
                            out.close()
                    except OSError:
                        pass
        t = threading.Thread(target=copy, daemon=True)
        t.start()
        self.threads.append(t)

    def finish(self):
        """After icy-sniff has ended: a writer still waiting for a FIFO's reader (icy-sniff stopped
        before it, e.g. on an error) is let go by opening the FIFOs for reading."""
        self.stopped = True
        for t in self.threads:
            while t.is_alive():
                for f in self.fifos:
                    try:
                        os.close(os.open(f, os.O_RDONLY | os.O_NONBLOCK))
                    except OSError:
                        pass
                t.join(0.05)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def failure_row(unit, capture, kind, message):
    """A row of OUT/failures (kind `failed`: could not be read; `damaged`: read up to a point)."""
    return {"set_id": unit["id"], "set_name": unit["name"], "capture": capture, "kind": kind, "message": message,
            "schema_version": SCHEMA_VERSION}


def diagnostics(stderr, unit, names):
    """icy-sniff's warnings about damaged captures and its errors, as failure rows."""
    rows = []
    for line in stderr.splitlines():
        # Not a diagnostic, or the summary line.
        if not line.startswith("icy-sniff: ") or " packets, " in line:
            continue
        text = line[len("icy-sniff: "):]
        for local, uri in names.items():
            text = text.replace(f"'{local}'", f"'{uri}'")
        kind = "failed"
        if text.startswith("warning: "):
            text = text[len("warning: "):]
            if " is damaged" not in text and " is empty" not in text:
                continue
            kind = "damaged"
        capture = next((pc for pc in unit["pieces"] if f"'{pc}'" in text), unit["pieces"][0])
        rows.append(failure_row(unit, capture, kind, text))
    return rows


class CompleteLines:
    """icy-sniff's output as pyarrow's JSON reader reads it: whole lines only. A last line cut
    short (icy-sniff killed while writing it) is held back and its length kept in `cut`, so that
    the rows before it are read, not lost with the block the reader would reject."""

    def __init__(self, raw):
        self.raw, self.held, self.cut = raw, b"", 0

    closed = False

    def readable(self):
        return True

    def read(self, n=-1):
        size = n if n is not None and n > 0 else 1 << 20
        while True:
            data = self.raw.read1(max(1, size - len(self.held))) if len(self.held) < size else b""
            if not data and len(self.held) < size:
                self.cut, self.held = len(self.held), b""   # the end: what is held is not a line
                return b""
            buf = self.held + data
            end = buf.rfind(b"\n")
            if end < 0 and len(buf) < size:
                self.held = buf
                continue
            if end < 0:
                self.held = b""
                return buf   # a line longer than the reader's block: given as it is
            self.held = buf[end + 1:]
            return buf[:end + 1]


class PartitionWriter:
    """The set's rows of one capture date, in one file made visible whole when complete."""

    def __init__(self, out, folder, unit, schema):
        import pyarrow.parquet as pq
        self.out = out
        self.final = out.set_file(folder, unit["id"])
        self.written = out.begin(self.final)
        self.writer = pq.ParquetWriter(self.written, schema, compression="snappy", filesystem=out.fs)
        self.pending, self.rows = [], 0

    def add(self, table):
        self.pending.append(table)
        self.rows += table.num_rows
        if self.rows >= ROW_GROUP:
            self.flush()

    def flush(self):
        import pyarrow as pa
        if self.pending:
            self.writer.write_table(pa.concat_tables(self.pending), row_group_size=1 << 20)
        self.pending, self.rows = [], 0

    def commit(self):
        self.flush()
        self.writer.close()
        self.out.commit(self.written, self.final)

    def abandon(self):
        try:
            self.writer.close()
        finally:
            if self.written != self.final:
                self.out.abandon(self.written)


def write_whole(out, table, final):
    import pyarrow.parquet as pq
    written = out.begin(final)
    pq.write_table(table, written, compression="snappy", filesystem=out.fs)
    out.commit(written, final)


def run_set(unit, binary, keylog, out):
    """On an executor: icy-sniff on one set, its rows written and committed as Parquet there.
    Returns (set_id, transactions, failures, seconds, committed): nothing else goes back."""
    import pyarrow as pa, pyarrow.compute as pc, pyarrow.json as pj
    started = time.time()
    ndjson_schema, tx_schema, fail_schema, sets_schema = arrow_schemas()
    mode = os.stat(binary).st_mode
    if not mode & stat.S_IXUSR:
        os.chmod(binary, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    remote = not is_local(unit["pieces"][0])
    feeder = Feeder(unit["pieces"]) if remote else None
    cmd = [binary] + (feeder.args() if remote else [a for p in unit["pieces"] for a in ("-r", p)])
    cmd += ["--format", "ndjson"]
    if keylog:
        cmd += ["--keylog", keylog]
    names = feeder.names() if remote else {}
    with tempfile.TemporaryFile() as errors:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors,
                             stdin=subprocess.PIPE if remote and len(unit["pieces"]) == 1 else subprocess.DEVNULL)
        if remote:
            feeder.start(p.stdin)
        writers, transactions = {}, 0
        try:
            stdout = p.stdout
            lines = CompleteLines(stdout)
            if stdout.peek(1):
                reader = pj.open_json(lines, read_options=pj.ReadOptions(block_size=8 << 20),
                                      parse_options=pj.ParseOptions(explicit_schema=ndjson_schema,
                                                                    unexpected_field_behavior="ignore"))
                for batch in reader:
                    table = finish_rows(pa.Table.from_batches([batch]), unit, names, tx_schema)
                    transactions += table.num_rows
                    dates = pc.cast(pc.cast(table.column("ts"), pa.timestamp("us")), pa.date32())
                    for day in pc.unique(dates).to_pylist():
                        part = table.filter(pc.is_null(dates) if day is None else pc.equal(dates, pa.scalar(day)))
                        key = "__HIVE_DEFAULT_PARTITION__" if day is None else day.isoformat()
                        if key not in writers:
                            writers[key] = PartitionWriter(out, f"transactions/capture_date={key}", unit, tx_schema)
                        writers[key].add(part)
            stdout.read()
            p.wait()
            if lines.cut and p.returncode >= 0:
                raise RuntimeError(f"icy-sniff ended normally with its last line cut short ({lines.cut} bytes)")
        except BaseException:
            p.kill()
            p.wait()
            for w in writers.values():
                w.abandon()
            raise
        finally:
            if feeder:
                feeder.finish()
        errors.seek(0)
        failures = diagnostics(errors.read().decode("utf-8", "replace"), unit, names)
    if feeder and feeder.error:
        failures.append(failure_row(unit, feeder.error[0], "failed", feeder.error[1]))
    # icy-sniff killed (a crash, the kernel's OOM killer): what it wrote is kept and said, and the
    # set is not committed, so the next run does it again (rewriting the same files).
    crashed = p.returncode < 0
    if crashed:
        try:
            name = signal.Signals(-p.returncode).name
        except ValueError:
            name = "unknown"
        failures.append(failure_row(unit, unit["pieces"][0], "failed",
                                    f"icy-sniff was stopped by signal {-p.returncode} ({name}) after {transactions} "
                                    "transactions: they are kept, and the set runs again in the next run"
                                    + (f" (a last row cut short, {lines.cut} bytes, is not)" if lines.cut else "")))
    for w in writers.values():
        w.commit()
    failures_file = out.set_file("failures", unit["id"])
    if failures:
        write_whole(out, pa.Table.from_pylist(failures, fail_schema), failures_file)
    elif out.exists(failures_file):
        out.abandon(failures_file)  # an earlier attempt's, which this one did not repeat
    if crashed:
        return unit["id"], transactions, len(failures), time.time() - started, False
    # Last: the commit marker. A rerun skips the set from here on.
    marker = pa.Table.from_pylist([{"set_id": unit["id"], "set_name": unit["name"], "pieces": unit["pieces"],
                                    "transactions": transactions, "failures": len(failures),
                                    "committed": datetime.now(timezone.utc), "schema_version": SCHEMA_VERSION}],
                                  sets_schema)
    write_whole(out, marker, out.set_file("sets", unit["id"]))
    return unit["id"], transactions, len(failures), time.time() - started, True


def finish_rows(table, unit, names, schema):
    """A batch of NDJSON rows as the transactions schema: the set added, `pushed` false where
    absent, a streamed capture named by its URI."""
    import pyarrow as pa, pyarrow.compute as pc
    keep = pc.and_(pc.invert(pc.fill_null(table.column("inferred"), False)), pc.is_null(table.column("type")))
    table = table.filter(keep).drop_columns(["inferred", "type"])
    n = table.num_rows
    if names:
        capture = table.column("capture")
        for local, uri in names.items():
            capture = pc.if_else(pc.equal(capture, local), pa.scalar(uri), capture)
        table = table.set_column(table.schema.get_field_index("capture"), "capture", capture)
    table = table.set_column(table.schema.get_field_index("pushed"), "pushed",
                             pc.fill_null(table.column("pushed"), False))
    table = (table.append_column("set_id", pa.array([unit["id"]] * n, pa.string()))
                  .append_column("set_name", pa.array([unit["name"]] * n, pa.string()))
                  .append_column("schema_version", pa.array([SCHEMA_VERSION] * n, pa.int32())))
    return table.cast(schema)


# -- driver ---------------------------------------------------------------------------------------

# A task costs about 50 ms of its own (scheduling, the Python worker, icy-sniff's start, the
# files): sets are packed into at most this many tasks per core, enough for the balance.
TASKS_PER_CORE = 3


def pack(sets, tasks):
    """The sets in at most `tasks` tasks of about equal bytes (largest first, each into the
    lightest task: LPT), each task's largest set first; the tasks in order of their largest set,
    so a long set never starts last."""
    bins = [[0, []] for _ in range(max(1, min(tasks, len(sets))))]
    for unit in sorted(sets, key=lambda u: -u["bytes"]):
        lightest = min(bins, key=lambda b: b[0])
        lightest[0] += unit["bytes"]
        lightest[1].append(unit)
    return [b[1] for b in sorted(bins, key=lambda b: -b[1][0]["bytes"]) if b[1]]


def run_sets(sets, binary, keylog, output):
    """One task: its sets in turn, into the output at URI `output`. A set committed already (by
    an earlier attempt of this task) is not run again."""
    out = Output(output)
    results = []
    with tempfile.TemporaryDirectory(prefix="icy-spark-keys-") as private:
        keys = fetched_keylog(keylog, private)
        for unit in sets:
            if out.exists(out.set_file("sets", unit["id"])):
                continue
            results.append(run_set(unit, binary, keys, out))
    return results


def fetched_keylog(uri, private):
    """--keylog on an executor: a path as it is; a URI of the file systems above copied once per
    task into `private` (a folder only this user reads, removed when the task ends), since
    icy-sniff reads a key log from a file."""
    if not uri or is_local(uri):
        return local_path(uri) if uri else None
    fsys, path = filesystem(uri)
    dest = os.path.join(private, "keylog")
    with os.fdopen(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f, \
            fsys.open_input_stream(path) as src:
        shutil.copyfileobj(src, f, 1 << 20)
    return dest


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", nargs="+", required=True,
                    help="capture files or folders: paths, file://, or URIs of pyarrow's file systems (s3://, s3a://, hdfs://, gs://)")
    ap.add_argument("--output", required=True,
                    help="a folder every executor can write at this path (or file://), or a URI of pyarrow's file systems")
    ap.add_argument("--icy-sniff", default=shutil.which("icy-sniff") or "icy-sniff")
    ap.add_argument("--keylog", help="an NSS key log: a path every executor can read, or a URI as --input takes")
    a = ap.parse_args()
    binary = os.path.abspath(a.icy_sniff)
    out = Output(a.output)
    output = a.output if not is_local(a.output) else out.root
    if a.keylog and not is_local(a.keylog):
        from pyarrow import fs
        try:
            fsys, path = filesystem(a.keylog)
            found = fsys.get_file_info(path).type == fs.FileType.File
        except (OSError, ValueError) as e:
            raise SystemExit(f"icy-sniff on Spark: cannot read the key log {a.keylog}: {e}")
        if not found:
            raise SystemExit(f"icy-sniff on Spark: cannot read the key log {a.keylog}: no such file")

    started = time.time()
    units, problems = plan(binary, a.input)
    done = committed_sets(out)
    todo = [u for u in units if u["id"] not in done]
    print(f"icy-sniff on Spark: {len(units)} capture sets ({sum(len(u['pieces']) for u in units)} captures), "
          f"{len(units) - len(todo)} already committed, {len(todo)} to run (planned in {time.time() - started:.1f} s)",
          file=sys.stderr)
    for line in problems:
        print(line, file=sys.stderr)
    if not todo:
        return
    remove_leftovers(out)
    import warnings
    # PySpark warns on import when pandas 3 is installed; the job does not use pandas.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from pyspark import SparkConf, SparkContext, SparkFiles
    sc = SparkContext(conf=SparkConf().setAppName("icy-sniff").setIfMissing("spark.log.level", "WARN"))
    try:
        sc.addFile(binary)
        name, keylog = os.path.basename(binary), a.keylog
        tasks = pack(todo, TASKS_PER_CORE * sc.defaultParallelism)
        results = (sc.parallelize(tasks, len(tasks))
                     .flatMap(lambda sets: run_sets(sets, SparkFiles.get(name), keylog, output))
                     .collect())
    finally:
        sc.stop()
    n_tx, n_fail = sum(r[1] for r in results), sum(r[2] for r in results)
    uncommitted = [r[0] for r in results if not r[4]]
    longest = max(results, key=lambda r: r[3], default=(None, 0, 0, 0.0, True))
    def n(count, what):
        return f"{count} {what}{'' if count == 1 else 's'}"
    print(f"icy-sniff on Spark: {n(n_tx, 'transaction')} of {n(len(results), 'set')} written to "
          f"{out.shown('transactions')}, {n(n_fail, 'failure')} to {out.shown('failures')}; "
          f"the longest set took {longest[3]:.1f} s", file=sys.stderr)
    if uncommitted:
        print(f"icy-sniff on Spark: {n(len(uncommitted), 'set')} not committed (icy-sniff was stopped by a signal; "
              f"see {out.shown('failures')}): the next run does {'it' if len(uncommitted) == 1 else 'them'} again",
              file=sys.stderr)


if __name__ == "__main__":
    main()
