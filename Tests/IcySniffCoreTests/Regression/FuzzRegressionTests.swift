import Foundation
import Testing
@testable import IcySniffCore

/// Every input a fuzzer made crash or hang (Tests/Fixtures/fuzz) runs through the whole pipeline
/// into every output without trapping.
@Suite struct FuzzRegressionTests {
    static let fixtures: [String] = {
        let dir = Paths.packageRoot.appendingPathComponent("Tests/Fixtures/fuzz")
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted().map { dir.appendingPathComponent($0).path }
    }()

    @Test func thereAreFixtures() { #expect(!Self.fixtures.isEmpty) }

    @Test(arguments: fixtures)
    func pipelineAndOutputsSurvive(_ path: String) throws {
        let har = HARWriter()
        let pipeline = Pipeline(sink: har)
        let source = try PcapSource.open(path: path)
        _ = pipeline.run(source)
        pipeline.finish()
        let out = OutputFile(memory: true)
        har.write(to: out)
        let bytes = out.takeBytes()
        #expect(try JSONSerialization.jsonObject(with: Data(bytes)) is [String: Any])
        let table = OutputFile(memory: true)
        let writer = TableWriter(format: .ndjson, output: table, options: ExportOptions())
        let (sink, _, _) = try analyse(path)
        for t in sink.transactions { writer.consume(t) }
        #expect(!table.takeBytes().isEmpty || sink.transactions.isEmpty)
    }

    @Test func absurdDatesSaturateInsteadOfTrapping() {
        let now = Timestamp(nanoseconds: 1_700_000_000_000_000_000)
        #expect(now.adding(seconds: 1e12) > now)
        #expect(Timestamp(nanoseconds: Int64.max - 10).adding(seconds: 1e12).nanoseconds == Int64.max / 2)
        #expect(Timestamp(secondsSinceEpoch: .infinity).nanoseconds == Int64.max / 2)
        #expect(CacheAssessment.shortDuration(1e20) == "∞")
    }
}
