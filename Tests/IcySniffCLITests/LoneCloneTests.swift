import Foundation
import Testing

/// A clone of the repository alone (no `../shared` beside it) runs every test but the
/// conformance ones: only ConformanceTests may name `../shared`, and every capture the other
/// tests read is in the repository.
@Suite struct LoneCloneTests {
    static let testRoots = ["Tests/IcySniffCLITests", "Tests/IcySniffCoreTests"]

    @Test func onlyTheConformanceTestsUseShared() throws {
        for root in Self.testRoots {
            let dir = CLI.packageRoot.appendingPathComponent(root)
            let walker = try #require(FileManager.default.enumerator(atPath: dir.path))
            while let p = walker.nextObject() as? String {
                guard p.hasSuffix(".swift"), !p.hasSuffix("ConformanceTests.swift"), !p.hasSuffix("CLISupport.swift"),
                      !p.hasSuffix("LoneCloneTests.swift") else { continue }
                let text = try String(contentsOf: dir.appendingPathComponent(p), encoding: .utf8)
                #expect(!text.contains("CLI.shared"), "\(root)/\(p) uses ../shared")
                #expect(!text.contains("shared/corpus"), "\(root)/\(p) names ../shared/corpus")
            }
        }
    }

    @Test func everyFixtureTheTestsNameIsInTheRepository() throws {
        var names = Set<String>()
        for root in Self.testRoots {
            let dir = CLI.packageRoot.appendingPathComponent(root)
            let walker = try #require(FileManager.default.enumerator(atPath: dir.path))
            while let p = walker.nextObject() as? String {
                guard p.hasSuffix(".swift") else { continue }
                let text = try String(contentsOf: dir.appendingPathComponent(p), encoding: .utf8)
                let pattern = try NSRegularExpression(pattern: #""((?:zeek|pcap2har)/[A-Za-z0-9_.\-]+\.(?:pcap|pcapng|pcap\.gz))""#)
                for m in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    names.insert(String(text[Range(m.range(at: 1), in: text)!]))
                }
            }
        }
        #expect(names.count >= 5)
        for name in names {
            let path = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/corpus/\(name)").path
            #expect(FileManager.default.fileExists(atPath: path), "\(name) is not in Tests/Fixtures/corpus")
        }
    }
}
