import Testing
import Foundation
@testable import IcySniffCore

/// `--client`: one device (an address) or several (a network), IPv4 or IPv6.
@Suite struct ClientFilterTests {
    static func v4(_ a: UInt32) -> IPAddress { IPAddress(ipv4: a) }

    @Test func addressesAndNetworks() throws {
        let one = try ClientNetwork(parsing: "192.168.1.23")
        #expect(one.contains(Self.v4(0xC0A8_0117)) && !one.contains(Self.v4(0xC0A8_0118)))
        let net = try ClientNetwork(parsing: "192.168.1.0/24")
        #expect(net.contains(Self.v4(0xC0A8_01FE)) && !net.contains(Self.v4(0xC0A8_0201)))
        let all = try ClientNetwork(parsing: "0.0.0.0/0")
        #expect(all.contains(Self.v4(0x0102_0304)))
        // An IPv4 network never holds IPv6 clients, whatever its prefix.
        #expect(!all.contains(IPAddress(high: 0x2001_0db8_0000_0000, low: 1)))
        let v6 = try ClientNetwork(parsing: "2001:db8::/32")
        #expect(v6.contains(IPAddress(high: 0x2001_0db8_ffff_0000, low: 7)) && !v6.contains(IPAddress(high: 0x2001_0db9_0000_0000, low: 7)))
        let host6 = try ClientNetwork(parsing: "fe80::1")
        #expect(host6.contains(IPAddress(high: 0xfe80_0000_0000_0000, low: 1)) && !host6.contains(IPAddress(high: 0xfe80_0000_0000_0000, low: 2)))
        for bad in ["300.1.1.1", "10.0.0.0/33", "::/129", "phone", "10.0.0.1/x", ""] {
            #expect(throws: FilterError.self, "\(bad)") { _ = try ClientNetwork(parsing: bad) }
        }
    }

    /// Transactions and connections of other devices are left out; the filter names none: all pass.
    @Test func otherDevicesAreLeftOut() throws {
        let collected = CollectingSink()
        var filter = TransactionFilter()
        filter.clients = [try ClientNetwork(parsing: "10.0.0.3")]
        let pipeline = Pipeline(sink: CacheJudgingSink(next: FilteringSink(filter: filter, next: collected)))
        PerClientCacheTests.fetch(pipeline, port: 40001, address: 0x0A00_0002, agent: "App/1.0", at: 0)
        PerClientCacheTests.fetch(pipeline, port: 40002, address: 0x0A00_0003, agent: "App/1.0", at: 1)
        pipeline.finish()
        #expect(collected.transactions.map { $0.connection.client.address } == [Self.v4(0x0A00_0003)])
        #expect(collected.connections.map { $0.client.address } == [Self.v4(0x0A00_0003)])
    }

    /// Each HAR page names the device it belongs to.
    @Test func harPagesNameTheirDevice() throws {
        let har = HARWriter()
        let pipeline = Pipeline(sink: CacheJudgingSink(next: har))
        PerClientCacheTests.fetch(pipeline, port: 40001, address: 0x0A00_0002, agent: "App/1.0", at: 0)
        PerClientCacheTests.fetch(pipeline, port: 40002, address: 0x0A00_0003, agent: "App/1.0", at: 1)
        pipeline.finish()
        let out = OutputFile(memory: true)
        har.write(to: out)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(out.takeBytes())) as? [String: Any])
        let log = try #require(json["log"] as? [String: Any])
        let pages = try #require(log["pages"] as? [[String: Any]])
        #expect(pages.compactMap { $0["_client"] as? String }.sorted() == ["10.0.0.2", "10.0.0.3"])
        // Each entry's page is its device's.
        let client = Dictionary(uniqueKeysWithValues: pages.map { ($0["id"] as! String, $0["_client"] as! String) })
        for e in (log["entries"] as? [[String: Any]]) ?? [] {
            #expect(client[e["pageref"] as? String ?? ""] == e["_clientIPAddress"] as? String)
        }
    }
}
