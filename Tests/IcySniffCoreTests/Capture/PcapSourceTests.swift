import Foundation
import Testing
@testable import IcySniffCore

@Suite final class PcapSourceTests {
    /// This test's files, removed when it ends (a new instance runs each test).
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("icy-sniff-tests-\(UUID().uuidString)")
    deinit { try? FileManager.default.removeItem(at: root) }

    func temporaryFile(_ bytes: [UInt8], name: String = "capture") -> String {
        let dir = root.appendingPathComponent(UUID().uuidString)
        try! FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent(name).path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    @Test func missingFileIsAClearError() {
        #expect(throws: CaptureError.self) { _ = try PcapSource.open(path: "/nonexistent/x.pcap") }
        do { _ = try PcapSource.open(path: "/nonexistent/x.pcap") } catch {
            #expect(error.message == "cannot open '/nonexistent/x.pcap': No such file or directory")
        }
    }

    @Test func emptyFileAndNotACapture() {
        let empty = temporaryFile([])
        #expect(throws: CaptureError.emptyFile(path: empty)) { _ = try PcapSource.open(path: empty) }
        let text = temporaryFile(Array("GET / HTTP/1.1\r\n\r\n this is not a capture".utf8))
        do {
            _ = try PcapSource.open(path: text)
            Issue.record("opened a text file")
        } catch {
            guard case .notACapture = error else { Issue.record("wrong error \(error)"); return }
            #expect(error.message.contains("is not a pcap or pcapng capture"))
        }
    }

    @Test func gzipIsRecognisedByMagicBytesNotName() throws {
        let gz = try Data(contentsOf: Paths.captures.appendingPathComponent("nginx-cache-demo.pcap.gz"))
        let renamed = temporaryFile([UInt8](gz), name: "no-extension")
        let (sink, outcome, stats) = try analyse(renamed)
        #expect(outcome == .completed)
        #expect(stats.packets > 50)
        #expect(sink.transactions.count == 12)
    }

    @Test func truncatedCaptureKeepsWhatCameBefore() throws {
        let whole = try Data(contentsOf: Paths.captures.appendingPathComponent("wikipedia.pcap"))
        let full = try analyse(Paths.captures.appendingPathComponent("wikipedia.pcap").path)
        // Cut in the middle of a record.
        let cut = temporaryFile([UInt8](whole.prefix(whole.count * 2 / 3 + 7)))
        let (sink, outcome, stats) = try analyse(cut)
        guard case .damaged(let message) = outcome else { Issue.record("not reported as damaged"); return }
        #expect(message.contains("truncated"))
        #expect(stats.packets > 0 && stats.packets < full.2.packets)
        #expect(sink.transactions.count > 0 && sink.transactions.count <= full.0.transactions.count)
    }

    @Test func linuxCookedV1AndV2GiveTheSameTransactions() throws {
        let v1 = try analyse(Paths.captures.appendingPathComponent("nginx-cache-demo.pcap.gz").path).0.transactions
        let v2 = try analyse(Paths.captures.appendingPathComponent("nginx-sll2.pcap").path).0.transactions
        #expect(v1.map { "\($0.request?.method ?? "") \($0.request?.targetString ?? "") \($0.response?.status ?? 0)" }
                == v2.map { "\($0.request?.method ?? "") \($0.request?.targetString ?? "") \($0.response?.status ?? 0)" })
    }

    @Test func badFilterIsRejected() throws {
        do {
            _ = try PcapSource.open(path: Paths.captures.appendingPathComponent("wikipedia.pcap").path, filter: "tcp port eighty")
            Issue.record("accepted a bad filter")
        } catch {
            guard case .badFilter = error else { Issue.record("wrong error \(error)"); return }
        }
        // A good filter keeps only the matching packets.
        let source = try PcapSource.open(path: Paths.captures.appendingPathComponent("wikipedia.pcap").path, filter: "udp")
        var count = 0
        while case .packet = source.next() { count += 1 }
        #expect(count < 136)
    }

    /// Timestamps are read in the precision libpcap actually gives (a live interface may refuse
    /// nanoseconds): a handle opened for microseconds gives the same times as one for nanoseconds.
    @Test func timestampsFollowTheHandlesPrecision() throws {
        let path = Paths.captures.appendingPathComponent("wikipedia.pcap").path
        func times(microseconds: Bool) throws -> [Timestamp] {
            let source = try PcapSource.open(path: path, microseconds: microseconds)
            var out: [Timestamp] = []
            while case .packet(let p) = source.next() { out.append(p.timestamp) }
            return out
        }
        let nano = try times(microseconds: false), micro = try times(microseconds: true)
        #expect(nano.count > 100)
        #expect(micro == nano)
        #expect(PcapSource.nanosecondsPerTick(precision: 0) == 1000 && PcapSource.nanosecondsPerTick(precision: 1) == 1)
    }
}
