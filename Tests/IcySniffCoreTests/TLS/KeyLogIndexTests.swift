import Testing
import Foundation
@testable import IcySniffCore

/// Key log files are indexed, not held: each connection's lines are read back when asked for.
/// The answers must be those of parsing the whole file, and never a secret of another connection.
@Suite struct KeyLogIndexTests {
    static func hex(_ n: Int, _ width: Int) -> String {
        String(repeating: String(format: "%02x", n & 0xFF), count: width)
    }

    static func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("icy-keys-\(UUID().uuidString)").path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    @Test func answersAreThoseOfTheWholeFile() throws {
        var text = "# a comment\n\n"
        for k in 0..<2000 {
            text += "CLIENT_HANDSHAKE_TRAFFIC_SECRET \(Self.hex(k, 32)) \(Self.hex(k + 1, 32))\r\n"
            text += "EXPORTER_SECRET \(Self.hex(k, 32)) \(Self.hex(9, 32))\n"
            text += "CLIENT_TRAFFIC_SECRET_0 \(Self.hex(k, 32)) \(Self.hex(k + 2, 32))\n"
        }
        // A later line of the same label wins, as when the lines are parsed in order.
        text += "CLIENT_TRAFFIC_SECRET_0 \(Self.hex(7, 32)) \(Self.hex(70, 32))\nnot a key line\n"
        let path = try Self.file(text)
        defer { unlink(path) }
        let fromFile = try KeyLog(paths: [path])
        let fromText = KeyLog(text: text)
        #expect(fromFile.count == 256 && fromText.count == 256, "2,000 lines name 256 distinct randoms")
        #expect(fromFile.secretLines == fromText.secretLines && fromFile.malformedLines == fromText.malformedLines)
        for k in [0, 7, 100, 255] {
            let random = TLSDecryptionTests.bytes(Self.hex(k, 32))
            let a = fromFile.secrets(forClientRandom: random), b = fromText.secrets(forClientRandom: random)
            #expect(a?.clientHandshake == b?.clientHandshake && a?.clientTraffic0 == b?.clientTraffic0 && a?.clientHandshake != nil)
        }
        #expect(fromFile.secrets(forClientRandom: TLSDecryptionTests.bytes(Self.hex(7, 32)))?.clientTraffic0 == TLSDecryptionTests.bytes(Self.hex(70, 32)))
        #expect(fromFile.secrets(forClientRandom: TLSDecryptionTests.bytes(Self.hex(1, 31))) == nil)
    }

    /// A growing key log replaced by a new file (a browser started again): lines of the old
    /// file are still found through its descriptor, after more than the read-back cache holds.
    @Test func aReplacedFileKeepsItsLines() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icy-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("keys").path
        var old = ""
        for k in 0..<300 { old += "CLIENT_RANDOM \(Self.hex(k, 32)) \(Self.hex(k, 48))\n" }
        try old.write(toFile: path, atomically: true, encoding: .utf8)
        let log = try KeyLog(paths: [path], growing: true)
        try "CLIENT_RANDOM \(Self.hex(1, 32)) \(Self.hex(99, 48))\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(log.secrets(forClientRandom: TLSDecryptionTests.bytes(Self.hex(1, 32)), now: true)?.masterSecret != nil)
        for k in 2..<300 {
            #expect(log.secrets(forClientRandom: TLSDecryptionTests.bytes(Self.hex(k, 32)))?.masterSecret == TLSDecryptionTests.bytes(Self.hex(k, 48)))
        }
    }

    /// A file cut and rewritten in place: the line now at an indexed offset names another
    /// connection, and its secret is not given for the one asked for.
    @Test func aFileRewrittenInPlaceNeverGivesAnotherConnectionsSecret() throws {
        let a = Self.hex(0xAA, 32), b = Self.hex(0xBB, 32)
        let path = try Self.file("CLIENT_RANDOM \(a) \(Self.hex(1, 48))\n")
        defer { unlink(path) }
        let log = try KeyLog(paths: [path])
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("CLIENT_RANDOM \(b) \(Self.hex(2, 48))\n".utf8))
        try handle.close()
        #expect(log.secrets(forClientRandom: TLSDecryptionTests.bytes(a)) == nil)
    }
}
