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

    /// Every page under docs/ that the sources, scripts, tests and docs cite exists: a comment
    /// of the web page pointed readers at an NDJSON page of docs/ that was never written (issue 56).
    @Test func everyDocumentCitedExists() throws {
        var cited = Set<String>()
        let pattern = try NSRegularExpression(pattern: #"docs/[A-Za-z0-9_\-]+\.md"#)
        for root in ["Sources", "scripts", "Tests", "docs", "README.md"] {
            let top = CLI.packageRoot.appendingPathComponent(root)
            var files: [URL] = []
            if root.hasSuffix(".md") { files = [top] } else {
                let walker = try #require(FileManager.default.enumerator(atPath: top.path))
                while let p = walker.nextObject() as? String {
                    if p.hasPrefix("Fixtures") { continue }
                    if [".swift", ".js", ".md", ".html", ".css", ".py", ""].contains(where: { $0.isEmpty ? !p.contains(".") : p.hasSuffix($0) }) {
                        files.append(top.appendingPathComponent(p))
                    }
                }
            }
            for file in files {
                guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
                for m in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    cited.insert(String(text[Range(m.range, in: text)!]))
                }
            }
        }
        #expect(cited.count >= 5, "\(cited)")
        for doc in cited {
            #expect(FileManager.default.fileExists(atPath: CLI.packageRoot.appendingPathComponent(doc).path), "\(doc) is cited but missing")
        }
    }
}
