import Testing
@testable import IcySniffCore

/// QUIC's CRYPTO and STREAM data by offset (`OffsetReassembler`): ranges in any order, repeated
/// and overlapping, come out as the bytes sent, the first copy winning; holes only when declared
/// or when what waits passes the cap, which counts each range's overhead too.
@Suite struct OffsetReassemblerTests {
    /// Feeds `ranges` (offset, bytes) and answers what came out, in order, and the holes.
    static func run(_ ranges: [(UInt64, [UInt8])], maxPending: Int = 4 << 20, end: Bool = true) -> (bytes: [UInt8], holes: [UInt64], left: Bool) {
        var r = OffsetReassembler(maxPending: maxPending)
        var out: [UInt8] = [], holes: [UInt64] = []
        for (offset, bytes) in ranges {
            bytes.withUnsafeBytes { r.insert($0, at: offset, deliver: { out += $0 }, lost: { holes.append($0) }) }
        }
        if end { r.skipHoles(deliver: { out += $0 }, lost: { holes.append($0) }) }
        return (out, holes, r.hasPending)
    }

    @Test func anyOrderWithRepeatsAndOverlapsGivesTheBytesSent() {
        var g = SystemRandomNumberGenerator()
        let sent = (0..<5000).map { _ in UInt8.random(in: 0...255, using: &g) }
        for _ in 0..<20 {
            var ranges: [(UInt64, [UInt8])] = []
            var at = 0
            while at < sent.count {
                let n = Int.random(in: 1...300, using: &g)
                let end = min(sent.count, at + n)
                ranges.append((UInt64(at), Array(sent[at..<end])))
                // A repeat, and a range overlapping the next one.
                if Bool.random(using: &g) { ranges.append((UInt64(at), Array(sent[at..<end]))) }
                if Bool.random(using: &g), end < sent.count { ranges.append((UInt64(at + n / 2), Array(sent[(at + n / 2)..<min(sent.count, end + 40)]))) }
                at = end
            }
            ranges.shuffle(using: &g)
            let got = Self.run(ranges)
            #expect(got.bytes == sent && got.holes.isEmpty && !got.left)
        }
    }

    /// Different bytes for the same offsets: the first copy to come wins, as for TCP.
    @Test func theFirstCopyWins() {
        let got = Self.run([(4, Array("BBBB".utf8)), (4, Array("CCCCCC".utf8)), (0, Array("AAAA".utf8))])
        #expect(String(decoding: got.bytes, as: UTF8.self) == "AAAABBBBCC")
    }

    /// A body in one-byte ranges, last byte first (the `tinyooo` shape): everything waits, then
    /// comes out in one piece when the first byte does.
    @Test func oneByteRangesLastFirst() {
        let n = 50_000
        let ranges = (0..<n).reversed().map { (UInt64($0), [UInt8(truncatingIfNeeded: $0)]) }
        let got = Self.run(ranges, end: false)
        #expect(got.bytes == (0..<n).map { UInt8(truncatingIfNeeded: $0) } && got.holes.isEmpty && !got.left)
    }

    /// One-byte ranges each beyond a hole (the `cryptogaps` shape): the cap counts their
    /// overhead, so holes are declared lost long before their count grows with the input.
    @Test func aFloodOfHolesIsHeldToTheCap() {
        let ranges = (0..<20_000).map { (UInt64(2 * $0 + 1), [UInt8(0x7A)]) }
        let cap = 1 << 18
        let got = Self.run(ranges, maxPending: cap, end: false)
        let bound = cap / (1 + OffsetReassembler.rangeOverhead) + 1
        #expect(got.holes.count > 20_000 - bound && got.holes.allSatisfy { $0 == 1 }, "\(got.holes.count) holes declared")
        #expect(got.bytes.count == got.holes.count)
    }

    /// The end of a stream whose last bytes never came: declared lost up to its final size.
    @Test func theEndDeclaresWhatNeverCame() {
        var r = OffsetReassembler()
        var out: [UInt8] = [], holes: [UInt64] = []
        Array("abc".utf8).withUnsafeBytes { r.insert($0, at: 0, deliver: { out += $0 }, lost: { holes.append($0) }) }
        r.lose(upTo: 10, lost: { holes.append($0) })
        #expect(out == Array("abc".utf8) && holes == [7] && r.delivered == 10 && r.lostBytes == 7)
    }

    @Test(arguments: [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2, 1, 3]])
    func anyOrder(_ order: [Int]) {
        let data = Array(0..<40).map(UInt8.init)
        var r = OffsetReassembler()
        var out: [UInt8] = []
        for i in order {
            // Ranges of 10 bytes overlapping their neighbours by 2.
            let start = max(0, i * 10 - 2), end = min(40, i * 10 + 10)
            Array(data[start..<end]).withUnsafeBytes { r.insert($0, at: UInt64(start), deliver: { out += $0 }, lost: { _ in Issue.record("lost") }) }
        }
        #expect(out == data)
        #expect(!r.hasPending && r.delivered == 40)
    }

    @Test func holesAtTheEnd() {
        var r = OffsetReassembler()
        var out: [UInt8] = []
        var lost: UInt64 = 0
        [UInt8](repeating: 7, count: 5).withUnsafeBytes { r.insert($0, at: 10, deliver: { out += $0 }, lost: { lost += $0 }) }
        #expect(out.isEmpty)
        r.skipHoles(deliver: { out += $0 }, lost: { lost += $0 })
        #expect(out.count == 5 && lost == 10 && r.delivered == 15)
    }
}
