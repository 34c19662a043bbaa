import Foundation
import Testing

/// The distributed run (issue 17) on a real standalone Spark cluster started by the test: one
/// Master and two Workers (spark-class) on localhost, the job submitted with spark-submit over an
/// archive of 100+ captures (nested folders, gzip, pcapng, a rotated set split across a
/// connection, a corrupt file). spark/test_spark_cluster.py does the work and the comparisons
/// (Parquet rows = icy-sniff's own NDJSON, field by field; the set whole; the failure recorded; a
/// second run a no-op; DuckDB and pyarrow read it back). About 60 s. And the same archive on a
/// real S3 server (moto's, started by spark/test_spark_s3.py): read by s3:// and s3a:// URIs,
/// streamed into icy-sniff, its Parquet written back to the store, in local[2]: about 35 s.
///
/// Needs pyspark (PyPI) and Java 17 (openjdk-17-jre-headless), which scripts/install-deps
/// installs; without them the test is skipped with that message, except under CI.
/// The two tests run one after the other: each starts JVMs that take both cores.
@Suite(.serialized) struct SparkTests {
    static var hasSpark: Bool {
        let r = try? CLI.run(["python3", "-c", "import pyspark, pyarrow"], executable: "/usr/bin/env")
        let java = FileManager.default.isExecutableFile(atPath: "/usr/bin/java")
        return Unchecked.note(r?.status == 0 && java, "the Spark job (python pyspark, pyarrow, Java)")
    }

    @Test(.enabled(if: SparkTests.hasSpark || ProcessInfo.processInfo.environment["CI"] != nil,
                   "pyspark and Java 17 are not installed (scripts/install-deps installs them): Spark test skipped"),
          .hangLimit)
    func archiveOnAStandaloneClusterEqualsTheLocalRun() throws {
        try Self.run("test_spark_cluster.py", saying: "spark-test: OK")
    }

    /// Runs spark/`script` with the binary under test; it must exit 0 and print `ok`.
    static func run(_ script: String, saying ok: String) throws {
        let path = CLI.packageRoot.appendingPathComponent("spark/\(script)").path
        let r = try CLI.run(["python3", path, "--icy-sniff", CLI.binary], executable: "/usr/bin/env")
        #expect(r.status == 0, "\(r.text.suffix(3000)) \(r.stderr.suffix(3000))")
        #expect(r.text.contains(ok), "\(r.text.suffix(3000))")
    }

    static var hasS3Server: Bool {
        let r = try? CLI.run(["python3", "-c", "import moto.server, boto3, flask, flask_cors"], executable: "/usr/bin/env")
        return Unchecked.note(r?.status == 0, "the Spark job on S3 (python moto, flask, flask_cors, boto3)")
    }

    @Test(.enabled(if: (SparkTests.hasSpark && SparkTests.hasS3Server) || ProcessInfo.processInfo.environment["CI"] != nil,
                   "pyspark, Java 17 or moto's S3 server are not installed (scripts/install-deps installs them): S3 test skipped"),
          .hangLimit)
    func archiveReadFromAnS3ServerEqualsTheLocalRun() throws {
        try Self.run("test_spark_s3.py", saying: "spark-s3-test: OK")
    }

    /// icy-sniff killed mid-set (spark/test_spark_crash.py, local[2], about 30 s): what it wrote
    /// is kept, its death is a failure row, the set is not committed, and the next run writes
    /// all its rows once.
    @Test(.enabled(if: SparkTests.hasSpark || ProcessInfo.processInfo.environment["CI"] != nil,
                   "pyspark and Java 17 are not installed (scripts/install-deps installs them): Spark test skipped"),
          .hangLimit)
    func aSetWhoseIcySniffIsKilledIsKeptAndRunAgain() throws {
        try Self.run("test_spark_crash.py", saying: "spark-crash-test: OK")
    }
}
