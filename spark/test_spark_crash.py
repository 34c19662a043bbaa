#!/usr/bin/env python3
"""The Spark job when icy-sniff dies mid-set (a crash, the OOM killer): nothing it wrote is lost
or doubled, the death is said, and the set is done again by the next run.

    python3 spark/test_spark_crash.py --icy-sniff .build/release/icy-sniff [--keep DIR]

A capture of 20,000 keep-alive exchanges (scripts/webview-slow-client's) is the archive. The
first run, in local[2], gets a wrapper for icy-sniff that feeds the real binary the capture's
first MiB through its standard input, leaves the pipe open, and sends it SIGKILL after 3 s (what
the OOM killer sends; a SIGSEGV from outside is caught by the debug build's backtracer): the job
must write a failure row saying "signal 9 (SIGKILL)", keep the rows icy-sniff had written, not
commit the set, and say so. The second run, with the real binary, must run that set alone, give
it all 20,000 rows once (equal to icy-sniff's NDJSON field by field) and drop the failure row.
Also: the reader of icy-sniff's output keeps every whole row before a last line cut short.
Prints "spark-crash-test: OK ..." and exits 0, or says what differs and exits 1.
"""
import importlib.machinery, importlib.util, json, os, shutil, stat, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_spark_cluster as cluster  # noqa: E402

WRAPPER = """#!/bin/bash
# The plan (--list-sets) as it is; a set's run: icy-sniff fed its capture's first MiB through a
# pipe kept open, then killed with SIGKILL (as the OOM killer does). The helpers hold none of
# the job's pipes.
case " $* " in *" --list-sets "*) exec {binary} "$@";; esac
args=(); path=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-r" ]; then path="$2"; args+=("-r" "-"); shift 2; else args+=("$1"); shift; fi
done
exec 3< <(head -c 1048576 "$path" 2>/dev/null; exec sleep 30 2>/dev/null)
(sleep 3; kill -KILL $$) >/dev/null 2>&1 &
exec {binary} "${{args[@]}}" <&3
"""


def main():
    binary, spark_home, work = cluster.begin("icy-spark-crash-")
    import pyarrow.parquet as pq
    archive, out = os.path.join(work, "archive"), os.path.join(work, "out")
    shutil.rmtree(archive, ignore_errors=True); shutil.rmtree(out, ignore_errors=True)
    os.makedirs(archive)
    loader = importlib.machinery.SourceFileLoader("slow_client", os.path.join(cluster.ROOT, "scripts/webview-slow-client"))
    slow_client = importlib.util.module_from_spec(importlib.util.spec_from_loader("slow_client", loader))
    loader.exec_module(slow_client)
    capture = os.path.join(archive, "keepalive.pcap")
    slow_client.keepalive_capture(capture, 20_000)
    wrapper = os.path.join(work, "icy-sniff")
    with open(wrapper, "w") as f:
        f.write(WRAPPER.format(binary=binary))
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)

    def submit(icy):
        cmd = [os.path.join(spark_home, "bin", "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
               os.path.join(cluster.ROOT, "spark/icy_sniff_spark.py"), "--input", archive, "--output", out, "--icy-sniff", icy]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        said = [l for l in (r.stdout + r.stderr).splitlines() if l.startswith("icy-sniff on Spark")]
        if r.returncode != 0:
            raise SystemExit("spark-crash-test: spark-submit failed:\n" + r.stderr[-4000:])
        return said

    failures = []
    # The reader of icy-sniff's output keeps every whole row of a stream whose last line was cut
    # short, in small reads as in large ones.
    import io, pyarrow.json as pj
    import icy_sniff_spark as job
    ndjson_schema = job.arrow_schemas()[0]
    local = subprocess.run([binary, "-r", capture, "--format", "ndjson"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    whole = local.stdout[:local.stdout.index(b"\n", 3_000_000) + 1]
    for block in (1 << 10, 1 << 20):
        lines = job.CompleteLines(io.BufferedReader(io.BytesIO(whole + b'{"ts":"2023-11-14T22:13:2')))
        read = pj.read_json(lines, read_options=pj.ReadOptions(block_size=block),
                            parse_options=pj.ParseOptions(explicit_schema=ndjson_schema, unexpected_field_behavior="ignore"))
        expected = whole.count(b"\n")
        if read.num_rows != expected or lines.cut != 25:
            failures.append(f"blocks of {block}: {read.num_rows} rows of {expected}, cut {lines.cut}")
    said = submit(wrapper)
    fails = pq.read_table(os.path.join(out, "failures")).to_pylist()
    partial = pq.read_table(os.path.join(out, "transactions")).num_rows if os.path.isdir(os.path.join(out, "transactions")) else 0
    if not any("signal 9 (SIGKILL)" in f["message"] and f["kind"] == "failed" for f in fails):
        failures.append(f"no failure row says icy-sniff was killed: {fails}")
    if os.path.isdir(os.path.join(out, "sets")) and os.listdir(os.path.join(out, "sets")):
        failures.append(f"the killed set was committed: {os.listdir(os.path.join(out, 'sets'))}")
    if not any("1 set not committed" in l for l in said):
        failures.append(f"the run did not say the set is not committed: {said}")
    if not 0 < partial < 20_000:
        failures.append(f"{partial} rows kept from the killed run, expected some and fewer than 20,000")

    said = submit(binary)
    if not any("0 already committed, 1 to run" in l for l in said):
        failures.append(f"the second run did not run the set again: {said}")
    local = subprocess.run([binary, "-r", archive, "--format", "ndjson"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    rows = pq.read_table(os.path.join(out, "transactions")).to_pylist()
    failures += cluster.differences([json.loads(l) for l in local.stdout.splitlines() if l.strip()], rows)
    if os.path.isdir(os.path.join(out, "failures")) and os.listdir(os.path.join(out, "failures")):
        failures.append(f"the first run's failure row stayed: {pq.read_table(os.path.join(out, 'failures')).to_pylist()}")
    return cluster.report("spark-crash-test", failures, f"the killed run kept {partial} rows and committed nothing; "
                          f"the next run wrote all {len(rows)} once")


if __name__ == "__main__":
    sys.exit(main())
