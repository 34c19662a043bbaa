import Foundation
import Testing
@testable import IcySniffServe

/// The page's files as the server has them: every script module and style sheet in
/// Sources/IcySniffServe/Page is served (a module left out fails the whole page in the
/// browser), byte for byte as written, each module's imports naming modules that are served,
/// each module preloaded by the page.
@Suite struct PageFilesTests {
    static let pageDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/IcySniffServe/Page")

    @Test func everyModuleOfThePageIsServedAsWritten() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.pageDirectory.path)
            .filter { $0.hasSuffix(".js") || $0.hasSuffix(".css") }.sorted()
        #expect(names.count >= 10, "\(names)")
        let index = try String(contentsOf: Self.pageDirectory.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(Set(names.map { "/" + $0 }) == Set(WebServer.pageFiles.keys), "served: \(WebServer.pageFiles.keys.sorted())")
        for name in names {
            let written = try [UInt8](Data(contentsOf: Self.pageDirectory.appendingPathComponent(name)))
            let served = try #require(WebServer.pageFiles["/" + name])
            #expect(served.body == written, "\(name)")
            #expect(served.type.hasPrefix(name.hasSuffix(".js") ? "text/javascript" : "text/css"), "\(name)")
            if name.hasSuffix(".js") {
                // Asked for with the page, not one round trip per level of imports.
                #expect(name == "app.js" || index.contains("<link rel=\"modulepreload\" href=\"\(name)\">"), "\(name) is not preloaded")
                let text = String(decoding: written, as: UTF8.self)
                for line in text.split(separator: "\n") where line.hasPrefix("import ") {
                    let target = line.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
                    #expect(target.hasPrefix("./") && WebServer.pageFiles["/" + target.dropFirst(2)] != nil, "\(name): \(line)")
                }
            }
        }
    }
}
