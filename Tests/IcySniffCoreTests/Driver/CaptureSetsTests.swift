import Testing
@testable import IcySniffCore

/// How capture paths become sets: the names each rotation tool writes, ordering, missing pieces,
/// content that does not agree. The probe (link type, snaplen, first packet) is given per path.
@Suite struct CaptureSetsTests {
    static func probe(_ second: Int64, dlt: Int32 = 1, snaplen: Int32 = 262_144) -> CaptureProbe {
        CaptureProbe(dlt: dlt, snaplen: snaplen, firstPacket: Timestamp(nanoseconds: second * 1_000_000_000))
    }

    static func group(_ files: [(String, CaptureProbe?)], listed: Bool = false) -> [[String]] {
        let probes = Dictionary(uniqueKeysWithValues: files.map { ($0.0, $0.1) })
        let inputs = files.map { CaptureSets.Input(path: $0.0, stem: $0.0, fromDirectory: !listed) }
        return CaptureSets.group(inputs, joinListed: listed, probe: { probes[$0] ?? nil }).map { $0.paths }
    }

    @Test func tcpdumpRotationFirstFileWithoutANumber() {
        // tcpdump -C 1 -w d/trace.pcap: trace.pcap, trace.pcap1, … trace.pcap10 (not in name order).
        let files = [("d/trace.pcap", Self.probe(0)), ("d/trace.pcap10", Self.probe(100)), ("d/trace.pcap1", Self.probe(10)),
                     ("d/trace.pcap2", Self.probe(20))] + (3...9).map { ("d/trace.pcap\($0)", Self.probe(Int64($0) * 10)) }
        let sets = Self.group(files)
        #expect(sets == [["d/trace.pcap"] + (1...10).map { "d/trace.pcap\($0)" }])
    }

    @Test func dumpcapAndEditcapNamesAndTheSetName() {
        let files = (1...4).map { ("d/cap_0000\($0)_2026112310\(10 + $0)00.pcapng", Self.probe(Int64($0) * 60)) }
        let inputs = files.map { CaptureSets.Input(path: $0.0, stem: String($0.0.dropLast(7)), fromDirectory: true) }
        let probes = Dictionary(uniqueKeysWithValues: files)
        let sets = CaptureSets.group(inputs, joinListed: false, probe: { probes[$0] })
        #expect(sets.count == 1 && sets[0].pieces.count == 4 && sets[0].joinedByName)
        #expect(sets[0].name == "d/cap")
    }

    @Test func aMissingNumberIsAMissingPiece() {
        let files = [1, 2, 4, 7].map { ("x/ring_0000\($0)_20261123101\($0)00.pcap", Self.probe(Int64($0) * 60)) }
        let probes = Dictionary(uniqueKeysWithValues: files)
        let sets = CaptureSets.group(files.map { .init(path: $0.0, stem: $0.0, fromDirectory: true) }, joinListed: false, probe: { probes[$0] })
        #expect(sets.count == 1)
        #expect(sets[0].pieces.map(\.missingBefore) == [[], [], [3], [5, 6]])
    }

    @Test func strftimeNamesAreOrderedByTheirPackets() {
        // tcpdump -G 3600 -w 'h-%d.%m.%Y-%H.pcap': name order is not time order; no counter, but
        // each name carries its year (2025-12-31T23:00Z is 1767222000).
        let t0: Int64 = 1_767_222_000
        let files = [("h-02.01.2026-00.pcap", Self.probe(t0 + 90_000)), ("h-01.01.2026-23.pcap", Self.probe(t0 + 86_400)),
                     ("h-31.12.2025-23.pcap", Self.probe(t0))]
        #expect(Self.group(files) == [["h-31.12.2025-23.pcap", "h-01.01.2026-23.pcap", "h-02.01.2026-00.pcap"]])
    }

    @Test func namesAlikeByChanceStayApart() {
        // The cache corpus: status codes, not a counter or a time.
        let files = [("heuristic-200.pcap", Self.probe(25_000_000)), ("heuristic-404.pcap", Self.probe(0)),
                     ("status-206.pcap", Self.probe(0)), ("status-500.pcap", Self.probe(2_000_000))]
        #expect(Self.group(files) == [["heuristic-200.pcap"], ["heuristic-404.pcap"], ["status-206.pcap"], ["status-500.pcap"]])
    }

    @Test func contentThatDoesNotAgreeSplitsASet() {
        let files = [("a1.pcap", Self.probe(0)), ("a2.pcap", Self.probe(10, dlt: 113)), ("a3.pcap", Self.probe(20, dlt: 113)),
                     ("a4.pcap", Self.probe(30, dlt: 113, snaplen: 96)), ("a5.pcap", nil)]
        #expect(Self.group(files) == [["a5.pcap"], ["a1.pcap"], ["a2.pcap", "a3.pcap"], ["a4.pcap"]])
    }

    @Test func unrelatedNamesStayApartAndListsJoinInTimeOrder() {
        let files = [("monday.pcap", Self.probe(0)), ("tuesday.pcap", Self.probe(86_400))]
        #expect(Self.group(files) == [["monday.pcap"], ["tuesday.pcap"]], "folder files: by name only")
        #expect(Self.group(files, listed: true) == [["monday.pcap", "tuesday.pcap"]], "a list the user gave, in time order")
        let backwards = [("later.pcap", Self.probe(100)), ("earlier.pcap", Self.probe(0))]
        #expect(Self.group(backwards, listed: true) == [["later.pcap"], ["earlier.pcap"]])
    }

    @Test func setNames() {
        #expect(CaptureSets.setName("trace") == "trace")
        #expect(CaptureSets.setName("sub/cap_00001_20261123101500") == "sub/cap")
        #expect(CaptureSets.setName("h-31.12.2025-23") == "h")
        #expect(CaptureSets.setName("00001") == "00001")
        // A digit inside a word, or touching one and the same in every piece, is the name's.
        #expect(CaptureSets.setName(["h2c-sample1", "h2c-sample2"]) == "h2c-sample")
        #expect(CaptureSets.setName(["d/cam2_00001", "d/cam2_00002"]) == "d/cam2")
        #expect(CaptureSets.setName(["trace.pcap", "trace.pcap1"]) == "trace.pcap")
        #expect(CaptureSets.setName(["v1_7", "v2_8"]) == "v")
    }

    /// Two phones captured at the same time, or two copies of one capture, named alike: they
    /// start together, so neither continues the other.
    @Test func capturesThatStartTogetherStayApart() {
        #expect(Self.group([("phone1.pcap", Self.probe(100)), ("phone2.pcap", Self.probe(100))]) == [["phone1.pcap"], ["phone2.pcap"]])
        #expect(Self.group([("h2c-sample1.pcap", Self.probe(0)), ("h2c-sample2.pcap", Self.probe(50))]) == [["h2c-sample1.pcap", "h2c-sample2.pcap"]])
    }
}
