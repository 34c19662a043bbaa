import Foundation
import Testing

/// The library product is usable as a SwiftPM dependency by version: a small package that
/// depends on icy-sniff through a local git URL and a version tag builds and runs. (SwiftPM
/// refuses a package depended upon by version whose library targets carry unsafe flags.)
@Suite struct DependencyTests {
    @Test(.hangLimit)
    func aPackageDependingOnTheLibraryByVersionBuildsAndRuns() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clone = dir.appendingPathComponent("icy-sniff")
        // The committed tree, tagged with a version of its own.
        let git = try CLI.run(["git", "clone", "--quiet", "--no-hardlinks", CLI.packageRoot.path, clone.path], executable: "/usr/bin/env")
        try #require(git.status == 0, "\(git.stderr)")
        let tag = try CLI.run(["git", "-C", clone.path, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "999.0.0", "-m", "test"],
                              executable: "/usr/bin/env")
        try #require(tag.status == 0, "\(tag.stderr)")

        let consumer = dir.appendingPathComponent("consumer")
        try FileManager.default.createDirectory(at: consumer.appendingPathComponent("Sources/consumer"), withIntermediateDirectories: true)
        try """
        // swift-tools-version:6.0
        import PackageDescription
        let package = Package(
            name: "consumer",
            dependencies: [.package(url: "file://\(clone.path)", from: "999.0.0")],
            targets: [.executableTarget(name: "consumer", dependencies: [.product(name: "IcySniffCore", package: "icy-sniff")])]
        )
        """.write(to: consumer.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try """
        import IcySniffCore

        final class Count: TransactionSink {
            var transactions = 0
            var avoidable = 0
            func consume(_ t: Transaction) { transactions += 1; if t.cache?.avoidable == true { avoidable += 1 } }
            func connectionFinished(_ c: Connection) {}
        }
        let count = Count()
        let pipeline = Pipeline(sink: CacheJudgingSink(next: count))
        let outcomes = CaptureDriver().run(Array(CommandLine.arguments.dropFirst()), through: pipeline)
        pipeline.finish()
        print("inputs \\(outcomes.filter(\\.analysed).count) transactions \\(count.transactions) avoidable \\(count.avoidable)")
        """.write(to: consumer.appendingPathComponent("Sources/consumer/main.swift"), atomically: true, encoding: .utf8)

        let build = try CLI.run(["swift", "build", "--package-path", consumer.path], executable: "/usr/bin/env")
        #expect(build.status == 0, "\(build.text.suffix(3000)) \(build.stderr.suffix(3000))")
        #expect(!(build.text + build.stderr).contains("unsafe build flags"))
        let run = try CLI.run([consumer.appendingPathComponent(".build/debug/consumer").path, CLI.capture("nginx-cache-demo.pcap.gz")],
                              executable: "/usr/bin/env")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.text == "inputs 1 transactions 12 avoidable 2\n", "\(run.text)")
    }
}
