import Testing
@testable import IcySniffCore

/// HAR timings from a real capture (a browser loading Wikipedia), checked against the packet
/// times tshark shows for the same packets.
@Suite struct TimingsTests {
    @Test func dnsConnectAndStartFromPackets() throws {
        let (sink, _, _) = try analyse(Paths.captures.appendingPathComponent("wikipedia.pcap").path)
        let withDNS = sink.transactions.filter { $0.timings.dns >= 0 }
        // The lookup of upload.wikimedia.org: query 19:06:08.854837, answer .855229 (A 208.80.152.3).
        let upload = try #require(withDNS.first { $0.host == "upload.wikimedia.org" })
        #expect(abs(upload.timings.dns - 0.392) < 0.001)
        #expect(upload.startTime == Timestamp(nanoseconds: 1_300_475_168_854_837_000))
        #expect(upload.timings.connect > 0)
        // One lookup is attributed to one connection only.
        let starts = withDNS.map(\.startTime)
        #expect(Set(starts).count == starts.count)
        // Later requests on a connection have no connect time; time is the sum of the phases.
        for t in sink.transactions {
            if t.depth > 1 { #expect(t.timings.connect == -1 && t.timings.dns == -1) }
            let sum = [t.timings.dns, t.timings.connect, t.timings.send, t.timings.wait, t.timings.receive].filter { $0 > 0 }.reduce(0, +)
            #expect(abs(t.timings.total - sum) < 0.0001)
        }
    }
}
