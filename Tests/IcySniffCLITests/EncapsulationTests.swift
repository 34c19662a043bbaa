import Foundation
import Testing

/// Link layers and tunnels (issue 18): a real capture (captures/wikipedia.pcap) re-encapsulated
/// by scapy, an encoder that is not ours, in each kind (scripts/make-encapsulated-captures):
/// every one must give the transactions of the original, with the same times and sizes.
///
/// Needs scapy (PyPI; scripts/install-deps installs it): skipped without it, except under CI.
@Suite struct EncapsulationTests {
    static var hasScapy: Bool {
        Unchecked.note((try? CLI.run(["python3", "-c", "import scapy.all"], executable: "/usr/bin/env"))?.status == 0, "generated link-layer, tunnel and injection captures (python scapy)")
    }

    static let kinds = ["vlan-mpls", "qinq", "mpls-pseudowire", "pppoe", "ppp-hdlc", "ppp", "cisco-hdlc",
                        "wifi-radiotap", "wifi-wds", "wifi-ppi", "wifi-prism", "gre", "gre-ethernet", "gre-mpls",
                        "pptp", "erspan2", "erspan3", "vxlan", "geneve", "ipip", "4in6", "6in4", "teredo", "gtp-u",
                        "pppoe-ipv6", "l2tp-ipv6", "arcnet", "arcnet-exception", "arcnet-linux"]

    /// What must not change with the wrapping: the transaction, its phases and its sizes. Over
    /// IPv6 (6in4, Teredo) the servers' addresses are no longer those the capture's DNS answers
    /// (A records) give, so their transactions rightly lose the DNS phase, and with it the start
    /// time (`ts` is the start of the DNS lookup when there is one): those compare without `ts`.
    static func rows(_ r: CLI.Result, withStart: Bool = true) throws -> [String] {
        try r.text.split(separator: "\n").map { line in
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return ((withStart ? ["ts"] : []) + ["method", "url", "status", "response_body_len", "connect_ms", "wait_ms", "receive_ms", "cache", "flags"])
                .map { "\(o[$0] ?? "nil")" }.joined(separator: " ")
        }.sorted()
    }

    @Test(.enabled(if: EncapsulationTests.hasScapy || ProcessInfo.processInfo.environment["CI"] != nil,
                   "scapy is not installed (scripts/install-deps installs it): encapsulation tests skipped"))
    func everyEncapsulationGivesTheOriginalsTransactions() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = CLI.capture("wikipedia.pcap")
        let make = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/make-encapsulated-captures").path,
                                source, dir.path], executable: "/usr/bin/env")
        try #require(make.status == 0, "\(make.stderr)")

        let original = try CLI.run(["-r", source, "--format", "ndjson"])
        let expected = try Self.rows(original)
        #expect(expected.count == 15)
        for kind in Self.kinds {
            let r = try CLI.run(["-r", dir.appendingPathComponent("\(kind).pcap").path, "--format", "ndjson"])
            #expect(r.status == 0, "\(kind): \(r.stderr)")
            let ipv6 = ["6in4", "teredo", "pppoe-ipv6", "l2tp-ipv6"].contains(kind)
            #expect(try Self.rows(r, withStart: !ipv6) == (ipv6 ? try Self.rows(original, withStart: false) : expected), "\(kind): \(r.stderr)")
            #expect(!r.stderr.contains("malformed"), "\(kind): \(r.stderr)")
        }

        // The MPLS pseudowire's Ethernet is a guess, and says so.
        let pw = try CLI.run(["-r", dir.appendingPathComponent("mpls-pseudowire.pcap").path, "--format", "ndjson"])
        #expect(pw.stderr.contains("mpls_payload_guessed×121"), "\(pw.stderr)")

        // Encrypted data frames and beacons among the clear ones: same transactions, and the
        // encrypted frames are counted by name.
        let mixed = try CLI.run(["-r", dir.appendingPathComponent("wifi-mixed.pcap").path, "--format", "ndjson"])
        #expect(try Self.rows(mixed) == expected)
        #expect(mixed.stderr.contains("encrypted_wifi_frame×121"), "\(mixed.stderr)")

        // One pcapng file, four interfaces of four link types (libpcap stops at the second one):
        // every packet read, those of the USER0 interface counted as not decoded; a filter
        // compiled for each link type.
        let multi = dir.appendingPathComponent("multi-link.pcapng").path
        let whole = try CLI.run(["-r", multi, "--format", "ndjson"])
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(try Self.rows(whole) == expected, "\(whole.stderr)")
        #expect(whole.stderr.contains("12 packets not decoded (unsupported_link_type×12)"), "\(whole.stderr)")
        let filter = ["-f", "host 208.80.152.2", "--format", "ndjson"]
        let filtered = try CLI.run(["-r", multi] + filter)
        let filteredOriginal = try Self.rows(try CLI.run(["-r", source] + filter))
        #expect(filteredOriginal.count == 2)
        #expect(try Self.rows(filtered) == filteredOriginal, "\(filtered.stderr)")

        // Ten IP-in-IP headers: deeper than icy-sniff follows. Counted, nothing invented.
        let deep = try CLI.run(["-r", dir.appendingPathComponent("too-deep.pcap").path, "--format", "ndjson"])
        #expect(deep.status == 0)
        #expect(deep.text.isEmpty)
        #expect(deep.stderr.contains("encapsulation_too_deep×121"), "\(deep.stderr)")
    }
}
