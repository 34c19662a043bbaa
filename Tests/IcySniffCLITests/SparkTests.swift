import Foundation
import Testing

/// The distributed run (issue 17) on a real standalone Spark cluster started by the test: one
/// Master and two Workers (spark-class) on localhost, the job submitted with spark-submit over an
/// archive of 100+ captures (nested folders, gzip, pcapng, a rotated set split across a
/// connection, a corrupt file). spark/test_spark_cluster.py does the work and the comparisons
/// (Parquet rows = icy-sniff's own NDJSON, field by field; the set whole; the failure recorded; a
/// second run a no-op; DuckDB and pyarrow read it back). About 100 s.
///
/// Needs pyspark (PyPI) and Java 17 (openjdk-17-jre-headless), which scripts/install-deps
/// installs; without them the test is skipped with that message, except under CI.
@Suite struct SparkTests {
    static var hasSpark: Bool {
        let r = try? CLI.run(["python3", "-c", "import pyspark, pyarrow"], executable: "/usr/bin/env")
        let java = FileManager.default.isExecutableFile(atPath: "/usr/bin/java")
        return Unchecked.note(r?.status == 0 && java, "the Spark job (python pyspark, pyarrow, Java)")
    }

    @Test(.enabled(if: SparkTests.hasSpark || ProcessInfo.processInfo.environment["CI"] != nil,
                   "pyspark and Java 17 are not installed (scripts/install-deps installs them): Spark test skipped"),
          .timeLimit(.minutes(10)))
    func archiveOnAStandaloneClusterEqualsTheLocalRun() throws {
        let script = CLI.packageRoot.appendingPathComponent("spark/test_spark_cluster.py").path
        let r = try CLI.run(["python3", script, "--icy-sniff", CLI.binary], executable: "/usr/bin/env")
        #expect(r.status == 0, "\(r.text.suffix(3000)) \(r.stderr.suffix(3000))")
        #expect(r.text.contains("spark-test: OK"), "\(r.text.suffix(3000))")
    }
}
