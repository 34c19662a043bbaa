@testable import IcySniffCore
import Foundation
import Testing

/// The names and periods of rotated files (`RotationNaming`) and the `Rotator`'s decisions:
/// lazily opened files, periods that never go back, the ring, names never overwritten.
@Suite struct RotationNamingTests {
    func naming(_ pattern: String, seconds: Int? = nil, bytes: Int? = nil, keep: Int? = nil) -> RotationNaming {
        var policy = RotationPolicy()
        policy.seconds = seconds
        policy.bytes = bytes
        policy.keep = keep
        return RotationNaming(pattern: pattern, policy: policy)
    }

    @Test func periodsAreAlignedToLocalMidnight() {
        for g in [1, 7, 60, 900, 3600, 86400] {
            let n = naming("x", seconds: g)
            let moments: [Int64] = [0, 1_300_000_000, 1_764_000_000, 1_764_000_000 + 86399]
            for t in moments {
                let start = n.periodStart(of: Timestamp(seconds: t, nanoseconds: 500))!
                #expect(start <= t && t < start + Int64(g), "g \(g) t \(t)")
                var clock = time_t(start)
                var parts = tm()
                localtime_r(&clock, &parts)
                #expect((start + Int64(parts.tm_gmtoff)) % Int64(g) == 0, "g \(g) t \(t)")
            }
        }
        #expect(naming("x").periodStart(of: Timestamp(seconds: 5, nanoseconds: 0)) == nil, "no -G, no periods")
        // Before the epoch (a capture with broken clocks): still the period that holds it.
        let before = naming("x", seconds: 60).periodStart(of: Timestamp(nanoseconds: -1))!
        #expect(before <= -1 && -1 < before + 60)
    }

    @Test func numbersGoBeforeTheExtensionOfTheFileName() {
        let n = naming("/var/log.d/http.ndjson")
        #expect(n.path(period: nil, number: 0) == "/var/log.d/http.ndjson")
        #expect(n.path(period: nil, number: 3) == "/var/log.d/http.3.ndjson")
        #expect(naming("/var/log.d/http").path(period: nil, number: 2) == "/var/log.d/http.2")
        #expect(naming(".hidden").path(period: nil, number: 1) == ".hidden.1")
        #expect(naming("out").path(period: nil, number: 1) == "out.1")
    }

    @Test func theTimeFormatIsTheLocalTimeOfThePeriodStart() {
        let start = naming("x", seconds: 3600).periodStart(of: Timestamp(seconds: 1_764_000_123, nanoseconds: 0))!
        var clock = time_t(start)
        var parts = tm()
        localtime_r(&clock, &parts)
        let expected = String(format: "h-%04d%02d%02d-%02d%02d.tsv", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min)
        #expect(naming("h-%Y%m%d-%H%M.tsv", seconds: 3600).path(period: start, number: 0) == expected)
        #expect(naming("h-%Y%m%d-%H%M.tsv", seconds: 3600).path(period: start, number: 1) == expected.replacingOccurrences(of: ".tsv", with: ".1.tsv"))
        // Without -G the name is taken as it is, percent signs and all.
        #expect(naming("100%.tsv").path(period: nil, number: 0) == "100%.tsv")
    }

    final class Memo: RotatedFile {
        let log: (String) -> Void
        var size = 0
        init(log: @escaping (String) -> Void) { self.log = log }
        func complete(as name: String, comment: String?) throws(OutputError) {
            #expect(FileManager.default.createFile(atPath: name, contents: Data("\(size)\n".utf8)))
            log(name)
        }
    }

    @Test func periodsNeverGoBackAndQuietPeriodsLeaveNoFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rot-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var completed: [String] = []
        let rotator = Rotator<Memo>(naming: naming(dir.path + "/f-%s.txt", seconds: 10)) { _ throws(OutputError) in Memo { completed.append($0) } }
        func at(_ s: Int64) -> Timestamp { Timestamp(seconds: s, nanoseconds: 0) }
        let base: Int64 = 1_764_000_000 - 1_764_000_000 % 86400   // a midnight in UTC; -G 10 divides every offset
        _ = rotator.file(at: at(base + 1))
        _ = rotator.file(at: at(base + 5))
        // Late (a connection flushed when it went idle): the current file, not a new old one.
        rotator.advance(to: at(base + 25))
        #expect(completed.count == 1)
        _ = rotator.file(at: at(base + 12))
        rotator.advance(to: at(base + 100))          // nothing was written in between
        rotator.finish(comment: nil, ensureFile: false)
        #expect(completed.count == 2)
        let names = completed.map { URL(fileURLWithPath: $0).lastPathComponent }
        let first = names[0].dropFirst(2).prefix { $0 != "." }
        let second = names[1].dropFirst(2).prefix { $0 != "." }
        #expect(Int64(second)! - Int64(first)! == 20, "\(names)")
    }

    @Test func theRingRemovesOnlyItsOwnOldestFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rot-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var current: Memo? = nil
        let rotator = Rotator<Memo>(naming: naming(dir.path + "/r.txt", bytes: 10, keep: 2)) { _ throws(OutputError) in
            let m = Memo { _ in }
            current = m
            return m
        }
        for i in 0..<5 {
            _ = rotator.file(at: .zero)
            current?.size = 10 + i
            rotator.wrote()
            if i == 2 {
                // Someone moved the newest file away: it is not ours to remove any more.
                try FileManager.default.moveItem(atPath: dir.path + "/r.2.txt", toPath: dir.path + "/moved.txt")
            }
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(left == ["moved.txt", "r.3.txt", "r.4.txt"], "\(left)")
        #expect(rotator.filesWritten == 5)
    }
}
