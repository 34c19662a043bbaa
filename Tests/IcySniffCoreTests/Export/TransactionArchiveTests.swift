import Foundation
import Testing
@testable import IcySniffCore

/// `TransactionArchive`: the web view makes a transaction's HAR entry from its archive, later.
/// Every transaction of every capture in this repository must give, read back from its archive, the very bytes `EntryEncoder` writes for the
/// original, with redaction on and off and with bodies; and bytes that are not a whole archive
/// must give nil, never a trap.
@Suite struct TransactionArchiveTests {
    /// The captures: each with its key log when one lies beside it (`X.keys` for `X.pcap`).
    static func captures() -> [(pcap: String, keys: String?)] {
        let fm = FileManager.default
        let roots = ["captures", "Tests/Fixtures"]
        var found: [(String, String?)] = []
        for root in roots {
            guard let walk = fm.enumerator(atPath: root) else { continue }
            for case let path as String in walk where path.hasSuffix(".pcap") || path.hasSuffix(".pcapng") {
                let full = root + "/" + path
                if full.contains("/fuzz/") { continue }   // hostile inputs: their own tests
                let base = (full as NSString).deletingPathExtension
                let keys = [base + ".keys", base + ".keylog"].first { fm.fileExists(atPath: $0) }
                found.append((full, keys))
            }
        }
        return found.sorted { $0.0 < $1.0 }
    }

    static func transactions(_ capture: (pcap: String, keys: String?)) throws -> [Transaction] {
        var options = PipelineOptions()
        options.http.keepBodies = true
        if let keys = capture.keys { options.keyLog = try KeyLog(paths: [keys]) }
        let collected = CollectingSink()
        let pipeline = Pipeline(sink: CacheJudgingSink(next: collected), options: options)
        _ = pipeline.run(try PcapSource.open(path: capture.pcap))
        pipeline.finish()
        return collected.transactions
    }

    static func entry(_ t: Transaction, options: ExportOptions) -> [UInt8] {
        let w = JSONWriter()
        EntryEncoder.writeEntry(t, pageref: "page_3", to: w, options: options)
        return w.array
    }

    @Test func everyTransactionsEntryComesBackFromItsArchive() throws {
        let captures = Self.captures()
        #expect(captures.count >= 20, "the repository's captures and fixtures: \(captures.count)")
        var secretsKept = ExportOptions()
        secretsKept.keepSecrets = true
        var bodies = ExportOptions()
        bodies.includeBodies = true
        var total = 0
        var seen: [String: Int] = [:]
        for capture in captures {
            let list: [Transaction]
            do { list = try Self.transactions(capture) } catch { continue }   // a file this reader does not take
            for t in list {
                total += 1
                let archive = ByteBuffer()
                TransactionArchive.write(t, to: archive)
                let back = try #require(archive.buffer.withUnsafeBytes {
                    TransactionArchive.read($0, requestBody: t.request?.body.kept, responseBody: t.response?.body.kept)
                }, "\(capture.pcap): transaction \(t.sequence) not read back")
                for options in [ExportOptions(), secretsKept, bodies] {
                    let want = Self.entry(t, options: options), got = Self.entry(back, options: options)
                    #expect(got == want, "\(capture.pcap) #\(t.sequence): \(String(decoding: got, as: UTF8.self)) != \(String(decoding: want, as: UTF8.self))")
                    if got != want { return }
                }
                if t.webSocket != nil { seen["websocket", default: 0] += 1 }
                if t.proxyTunnel != nil { seen["proxy tunnel", default: 0] += 1 }
                if t.tunnel != nil { seen["tunnel", default: 0] += 1 }
                if t.streamID != nil { seen["stream", default: 0] += 1 }
                if t.cache?.storable == true { seen["stored", default: 0] += 1 }
                if t.request == nil || t.response == nil { seen["half", default: 0] += 1 }
                if !t.allWeirds.isEmpty { seen["flags", default: 0] += 1 }
                if t.response?.body.wasDecoded == true { seen["decoded", default: 0] += 1 }
                if t.request?.headers.contains(.cookie) == true { seen["cookie", default: 0] += 1 }
            }
        }
        #expect(total > 100, "transactions: \(total)")
        // What the round trip covers: each kind of field the entry writes, at least once.
        for kind in ["websocket", "proxy tunnel", "tunnel", "stream", "stored", "half", "flags", "decoded", "cookie"] {
            #expect(seen[kind, default: 0] > 0, "no transaction with \(kind) among \(total): \(seen)")
        }
    }

    @Test func bytesThatAreNotAWholeArchiveGiveNil() throws {
        let list = try Self.transactions(("captures/websocket-sample.pcap", "captures/websocket-sample.keys"))
        let t = try #require(list.first { $0.webSocket != nil })
        let archive = ByteBuffer()
        TransactionArchive.write(t, to: archive)
        let bytes = archive.array
        // Cut anywhere: nil, no trap.
        for cut in 0..<bytes.count {
            #expect(bytes[..<cut].withUnsafeBytes { TransactionArchive.read($0) } == nil, "cut at \(cut)")
        }
        // One byte too many: not a whole archive either.
        #expect((bytes + [0]).withUnsafeBytes { TransactionArchive.read($0) } == nil)
        // Lengths that point past the end (every 4-byte word set to 0xFFFFFFFF in turn).
        for at in stride(from: 0, to: bytes.count - 4, by: 7) {
            var bad = bytes
            for i in at..<at + 4 { bad[i] = 0xFF }
            _ = bad.withUnsafeBytes { TransactionArchive.read($0) }
        }
        #expect(bytes.withUnsafeBytes { TransactionArchive.read($0) } != nil)
    }
}
