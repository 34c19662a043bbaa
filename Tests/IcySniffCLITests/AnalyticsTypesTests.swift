import Foundation
import Testing

/// Logs that analytics tools read right (issue 19): the merged TSV, CSV and NDJSON of a batch
/// and the `--connections` TSV, loaded by DuckDB (and pandas where installed), type statuses and
/// sizes as integers, durations and phases as doubles, times as timestamps; a phase that did not
/// happen is NULL, so AVG over it is the average of those that did.
///
/// DuckDB and pandas come from PyPI (scripts/install-deps); without DuckDB the test is skipped,
/// except under CI.
@Suite struct AnalyticsTypesTests {
    static var hasDuckDB: Bool {
        Unchecked.note((try? CLI.run(["python3", "-c", "import duckdb"], executable: "/usr/bin/env"))?.status == 0, "DuckDB reading the NDJSON (python duckdb)")
    }

    @Test(.enabled(if: AnalyticsTypesTests.hasDuckDB || ProcessInfo.processInfo.environment["CI"] != nil,
                   "duckdb is not installed (scripts/install-deps installs it): analytics test skipped"))
    func duckDBAndPandasTypeTheColumns() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let captures = CLI.packageRoot.appendingPathComponent("captures").path
        for format in ["tsv", "csv", "ndjson"] {
            let r = try CLI.run(["-r", captures, "--format", format, "-o", dir.appendingPathComponent("merged.\(format)").path, "-q"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let connections = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "-r", CLI.capture("tls-sample.pcap"), "--connections",
                                       "--format", "tsv", "-o", dir.appendingPathComponent("connections.tsv").path, "-q"])
        #expect(connections.status == 0, "\(connections.stderr)")
        let script = """
        import json, sys, duckdb
        d = sys.argv[1]
        def types(source):
            return {name: kind for name, kind, *_ in duckdb.sql(f"DESCRIBE SELECT * FROM {source}").fetchall()}
        tsv = types(f"read_csv_auto('{d}/merged.tsv', delim='\\t', header=true)")
        csv = types(f"read_csv_auto('{d}/merged.csv', header=true)")
        for t in (tsv, csv):
            assert t["status"] == "BIGINT" and t["size"] == "BIGINT", t
            assert t["duration"] == "DOUBLE" and t["time"].startswith("TIMESTAMP"), t
        nd = types(f"read_json_auto('{d}/merged.ndjson')")
        for column in ("status", "response_body_len", "request_body_len", "client_port"):
            assert nd[column] == "BIGINT", (column, nd[column])
        for column in ("time_ms", "connect_ms", "wait_ms", "dns_ms"):
            assert nd[column] == "DOUBLE", (column, nd[column])
        rows = [json.loads(l) for l in open(f"{d}/merged.ndjson")]
        happened = [r["connect_ms"] for r in rows if r["connect_ms"] is not None]
        assert happened and len(happened) < len(rows), "some requests reuse a connection"
        avg = duckdb.sql(f"SELECT avg(connect_ms) FROM read_json_auto('{d}/merged.ndjson')").fetchall()[0][0]
        assert abs(avg - sum(happened) / len(happened)) < 1e-6, (avg, happened)
        conn = types(f"read_csv_auto('{d}/connections.tsv', delim='\\t', header=true)")
        assert conn["handshake_ms"] == "DOUBLE" and conn["bytes_from_client"] == "BIGINT" and conn["tls_handshake_ms"] == "DOUBLE", conn
        try:
            import pandas
        except ImportError:
            print("pandas: not installed, skipped")
        else:
            from pandas.api.types import is_numeric_dtype
            for name, sep in (("merged.tsv", "\\t"), ("merged.csv", ",")):
                frame = pandas.read_csv(f"{d}/{name}", sep=sep)
                assert all(is_numeric_dtype(frame[c]) for c in ("status", "size", "duration")), frame.dtypes
            frame = pandas.read_json(f"{d}/merged.ndjson", lines=True)
            assert all(is_numeric_dtype(frame[c]) for c in ("status", "connect_ms", "wait_ms")), frame.dtypes
            print("pandas: ok")
        print("analytics: ok")
        """
        let r = try CLI.run(["python3", "-c", script, dir.path], executable: "/usr/bin/env")
        #expect(r.status == 0, "\(r.text) \(r.stderr.suffix(2000))")
        #expect(r.text.contains("analytics: ok"), "\(r.text)")
        if ProcessInfo.processInfo.environment["CI"] != nil { #expect(r.text.contains("pandas: ok"), "\(r.text)") }
    }
}
