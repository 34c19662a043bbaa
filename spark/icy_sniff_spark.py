#!/usr/bin/env python3
"""icy-sniff over a capture archive on Apache Spark.

    spark-submit [--master URL] spark/icy_sniff_spark.py --input PATH [PATH ...] --output OUT
                 [--icy-sniff BINARY] [--keylog FILE]

The driver asks icy-sniff for the units of work (`icy-sniff --list-sets -r PATH ...`: every
capture, the pieces of a rotated set grouped into one unit, by the same rules as a local batch),
ships the binary to the executors (SparkContext.addFile), and runs `icy-sniff -r PIECE ...
--format ndjson` on each unit on the executor, on its local copy of the binary. The NDJSON rows
become a DataFrame with an explicit, versioned schema (TRANSACTIONS_SCHEMA, docs/SPARK.md),
written as Parquet to OUT/transactions, partitioned by capture date. A unit that fails (a capture
icy-sniff cannot read, a damaged one) is a row of OUT/failures (path, kind, message); it never
fails the job. Running again skips the sets whose rows are already committed (their set_id is in
OUT/transactions), so a rerun after a failure or with new captures does only what is missing.

Inputs are paths on a file system every executor sees at the same path (local disks of a
one-machine cluster, NFS, a FUSE mount of HDFS or S3).
"""
import argparse, hashlib, json, os, shutil, stat, subprocess, sys
from datetime import datetime, timezone

SCHEMA_VERSION = 2


def schema():
    from pyspark.sql.types import (ArrayType, BooleanType, DateType, DoubleType, IntegerType, LongType,
                                   StringType, StructField, StructType, TimestampType)
    s, l, d, b = StringType(), LongType(), DoubleType(), BooleanType()
    fields = [
        # The NDJSON fields of icy-sniff (docs/OUTPUT.md), names kept.
        ("ts", TimestampType()), ("capture", s), ("connection", s), ("depth", l),
        ("client_ip", s), ("client_port", IntegerType()), ("server_ip", s), ("server_port", IntegerType()),
        ("method", s), ("host", s), ("target", s), ("url", s), ("protocol", s), ("request_version", s),
        ("user_agent", s), ("referrer", s), ("request_body_len", l), ("status", IntegerType()), ("reason", s),
        ("response_version", s), ("content_type", s), ("content_encoding", s), ("response_body_len", l),
        ("response_encoded_len", l), ("location", s),
        ("time_ms", d), ("dns_ms", d), ("connect_ms", d), ("send_ms", d), ("wait_ms", d), ("receive_ms", d),
        ("cache", s), ("cache_storable", b), ("cache_lifetime", d), ("cache_lifetime_source", s), ("cache_age", d),
        ("cache_fresh_for", d), ("cache_avoidable", b), ("tls_version", s), ("sni", s), ("ssl_ms", d),
        ("stream", l), ("pushed", b), ("flags", ArrayType(s)),
        # schema_version 2: a WebSocket's totals (null for other transactions).
        ("ws_messages_sent", l), ("ws_messages_received", l), ("ws_bytes_sent", l), ("ws_bytes_received", l),
        ("ws_close_code", IntegerType()),
        # Added by the job.
        ("set_id", s), ("set_name", s), ("schema_version", IntegerType()), ("capture_date", DateType()),
    ]
    return StructType([StructField(n, t, True) for n, t in fields])


def failures_schema():
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType
    return StructType([StructField("set_id", StringType()), StructField("set_name", StringType()),
                       StructField("capture", StringType()), StructField("kind", StringType()),
                       StructField("message", StringType()), StructField("schema_version", IntegerType())])


def json_schema():
    """The NDJSON fields as Spark reads them (the schema without the columns the job adds)."""
    from pyspark.sql.types import StructType
    return StructType([f for f in schema().fields if f.name not in ("set_id", "set_name", "schema_version", "capture_date")]
                      + [f for f in schema().fields if f.name in ("set_id", "set_name")])


def run_unit(unit, keylog):
    """On an executor: icy-sniff on one set; yields ("tx", row) and ("failure", row)."""
    from pyspark import SparkFiles
    binary = SparkFiles.get("icy-sniff")
    mode = os.stat(binary).st_mode
    if not mode & stat.S_IXUSR:
        os.chmod(binary, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    cmd = [binary]
    for piece in unit["pieces"]:
        cmd += ["-r", piece]
    cmd += ["--format", "ndjson"]
    if keylog:
        cmd += ["--keylog", keylog]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    # The NDJSON lines go on as text, each with its set added; the JVM parses them (spark.read.json
    # with the schema), which is far cheaper than building Python rows.
    tail = ("," + json.dumps({"set_id": unit["id"], "set_name": unit["name"]})[1:]).encode()
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.endswith(b"}"):
            yield ("tx", (line[:-1] + tail).decode("utf-8", "replace"))
    # Diagnostics: "icy-sniff: warning: '<path>' is damaged: …" and "icy-sniff: <error>".
    for line in p.stderr.decode("utf-8", "replace").splitlines():
        # Not a diagnostic, or the summary line.
        if not line.startswith("icy-sniff: ") or " packets, " in line:
            continue
        text = line[len("icy-sniff: "):]
        kind = "failed"
        if text.startswith("warning: "):
            text = text[len("warning: "):]
            if " is damaged" not in text and " is empty" not in text:
                continue
            kind = "damaged"
        capture = next((pc for pc in unit["pieces"] if f"'{pc}'" in text), unit["pieces"][0])
        yield ("failure", (unit["id"], unit["name"], capture, kind, text, SCHEMA_VERSION))


def plan(binary, inputs):
    """The units of work: icy-sniff's own grouping of the inputs into capture sets."""
    cmd = [binary, "--list-sets"]
    for i in inputs:
        cmd += ["-r", i]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    units = []
    for line in p.stdout.decode().splitlines():
        s = json.loads(line)
        # A set is identified by its pieces (path, size, mtime): new or changed captures run again.
        h = hashlib.sha256()
        for piece in s["pieces"]:
            st = os.stat(piece)
            h.update(f"{os.path.abspath(piece)}\0{st.st_size}\0{int(st.st_mtime)}\0".encode())
        units.append({"id": h.hexdigest()[:32], "name": s["name"], "pieces": [os.path.abspath(x) for x in s["pieces"]]})
    problems = [l for l in p.stderr.decode().splitlines() if l.strip()]
    if p.returncode != 0 and not units:
        raise SystemExit(f"icy-sniff on Spark: {binary} --list-sets failed (status {p.returncode}): "
                         + " ".join(problems[-3:]))
    return units, problems


def sets_schema():
    from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType, TimestampType
    return StructType([StructField("set_id", StringType()), StructField("set_name", StringType()),
                       StructField("pieces", ArrayType(StringType())), StructField("transactions", LongType()),
                       StructField("failures", LongType()), StructField("committed", TimestampType()),
                       StructField("schema_version", IntegerType())])


def committed_sets(spark, out):
    """Sets done by an earlier run: listed in OUT/sets (written after their rows), or with rows
    in OUT/transactions (a run that stopped between the two commits)."""
    done = set()
    for sub in ("sets", "transactions"):
        path = os.path.join(out, sub)
        if os.path.isdir(path):
            done |= {r[0] for r in spark.read.parquet(path).select("set_id").distinct().collect()}
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", nargs="+", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--icy-sniff", default=shutil.which("icy-sniff") or "icy-sniff")
    ap.add_argument("--keylog", help="an NSS key log every executor can read at this path")
    a = ap.parse_args()
    binary = os.path.abspath(a.icy_sniff)
    inputs = [i[len("file://"):] if i.startswith("file://") else i for i in a.input]

    from pyspark.sql import SparkSession
    # UTC: capture_date is the UTC date of ts, whatever the machines' time zone.
    spark = SparkSession.builder.appName("icy-sniff").config("spark.sql.session.timeZone", "UTC").getOrCreate()
    sc = spark.sparkContext
    out = a.output[len("file://"):] if a.output.startswith("file://") else a.output
    tx_path, fail_path = os.path.join(out, "transactions"), os.path.join(out, "failures")

    units, problems = plan(binary, inputs)
    done = committed_sets(spark, out)
    todo = [u for u in units if u["id"] not in done]
    print(f"icy-sniff on Spark: {len(units)} capture sets ({sum(len(u['pieces']) for u in units)} captures), "
          f"{len(units) - len(todo)} already committed, {len(todo)} to run", file=sys.stderr)
    for line in problems:
        print(line, file=sys.stderr)
    if todo:
        sc.addFile(binary)
        keylog = a.keylog
        # Largest sets first, one task each: a long set never starts last.
        todo.sort(key=lambda u: -sum(os.path.getsize(p) for p in u["pieces"]))
        results = sc.parallelize(todo, len(todo)).flatMap(lambda u: run_unit(u, keylog))
        results = results.persist()
        from pyspark.sql import functions as F
        lines = results.filter(lambda r: r[0] == "tx").map(lambda r: r[1])
        parsed = spark.read.json(lines, schema=json_schema(), timestampFormat="yyyy-MM-dd'T'HH:mm:ss.SSSSSSX",
                                 mode="FAILFAST")
        tx = (parsed.withColumn("pushed", F.coalesce(F.col("pushed"), F.lit(False)))
                    .withColumn("schema_version", F.lit(SCHEMA_VERSION))
                    .withColumn("capture_date", F.to_date(F.col("ts")))
                    .select([f.name for f in schema().fields]))
        # One commit for the whole run (Spark's output committer): a set's rows appear together.
        tx.write.mode("append").partitionBy("capture_date").parquet(tx_path)
        failures = spark.createDataFrame(results.filter(lambda r: r[0] == "failure").map(lambda r: r[1]), failures_schema())
        failures.write.mode("append").parquet(fail_path)
        # Last: the sets this run did, with their counts. A rerun skips them.
        tx_counts = {r[0]: r[1] for r in tx.groupBy("set_id").count().collect()}
        fail_counts = results.filter(lambda r: r[0] == "failure").map(lambda r: (r[1][0], 1)).countByKey()
        now = datetime.now(timezone.utc)
        done_rows = [(u["id"], u["name"], u["pieces"], tx_counts.get(u["id"], 0), fail_counts.get(u["id"], 0),
                      now, SCHEMA_VERSION) for u in todo]
        spark.createDataFrame(done_rows, sets_schema()).coalesce(1).write.mode("append").parquet(os.path.join(out, "sets"))
        n_tx, n_fail = sum(tx_counts.values()), sum(fail_counts.values())
        print(f"icy-sniff on Spark: {n_tx} transactions written to {tx_path}, {n_fail} failures to {fail_path}", file=sys.stderr)
    spark.stop()


if __name__ == "__main__":
    main()
