import Foundation
import Testing

/// HTTP/3 over QUIC from the command line, on the recorded fixture (an aioquic client and
/// server: Tests/Fixtures/quic): the connection without keys, the transactions with them.
@Suite struct QUICTests {
    let capture = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/quic/h3-concurrent-qpack-statuses.pcap").path
    let keys = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/quic/h3-concurrent-qpack-statuses.keys").path

    /// Without keys, HTTP/3's requests are estimated from the client's packet sizes (issue 52):
    /// one row each, at the request's packet; a request alone on its connection (the client
    /// waited for the previous response and the next came after its own) has the response's
    /// bytes — header block and body — within 10 % or 100 bytes of the decrypted run's, and its
    /// wait; requests sent together have neither. Checked against the same captures decrypted.
    @Test func keylessHTTP3RequestsAreEstimatedFromPackets() throws {
        func rows(_ args: [String]) throws -> [[String: Any]] {
            try CLI.run(args + ["--format", "ndjson", "--quiet"]).text.split(separator: "\n").compactMap {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        /// Seconds of the day of an NDJSON `ts` ("2026-11-25T19:15:43.213066Z"): a capture lasts seconds.
        func seconds(_ ts: Any?) -> Double {
            let clock = (ts as? String ?? "").split(separator: "T").last?.dropLast() ?? ""
            return clock.split(separator: ":").reduce(0.0) { $0 * 60 + (Double($1) ?? 0) }
        }
        let fixtures = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/quic")
        var alone = 0
        for name in ["h3-v2-rebind-cancel", "h3-resume-0rtt", "h3-concurrent-qpack-statuses"] {
            let capture = fixtures.appendingPathComponent("\(name).pcap").path, keys = fixtures.appendingPathComponent("\(name).keys").path
            let truth = try rows(["-r", capture, "--keylog", keys]).filter { $0["method"] is String }
            let estimated = try rows(["-r", capture]).filter { $0["inferred"] as? Bool == true }
            #expect(estimated.allSatisfy { $0["protocol"] as? String == "h3" && $0["method"] is NSNull })
            // Requests sent in one packet count once: never more rows than requests, at most 10 % fewer.
            #expect(estimated.count <= truth.count && Double(estimated.count) >= 0.9 * Double(truth.count) - 0.5,
                    "\(name): \(estimated.count) rows for \(truth.count) requests")
            for r in estimated {
                // The request's packet: within 5 ms of the decrypted request's first byte (the
                // first request's includes the handshake: its connect time).
                let at = seconds(r["ts"])
                let match = truth.min { a, b in
                    abs(seconds(a["ts"]) + (a["connect_ms"] as? Double ?? 0) / 1000 - at) < abs(seconds(b["ts"]) + (b["connect_ms"] as? Double ?? 0) / 1000 - at)
                }
                let t = try #require(match)
                #expect(abs(seconds(t["ts"]) + (t["connect_ms"] as? Double ?? 0) / 1000 - at) < 0.005, "\(name): \(r)")
                guard r["alone"] as? Bool == true else {
                    #expect(r["response_bytes"] is NSNull && r["wait_ms"] is NSNull, "\(r)")
                    continue
                }
                alone += 1
                let bytes = try #require(r["response_bytes"] as? Int)
                let expected = t["response_encoded_len"] as? Int ?? 0
                #expect(bytes >= expected && abs(bytes - expected) <= max(100, expected / 10), "\(name): \(bytes) for a body of \(expected)")
                #expect(r["wait_ms"] is Double)
            }
        }
        #expect(alone >= 4)
    }

    /// A client's Initial whose datagram was cut into IP fragments (a 1,200-byte Initial on a path
    /// with a smaller MTU) and lost its last fragment: the datagram is dropped
    /// (fragment_reassembly_timeout), and the QUIC version its first fragment shows is said, as
    /// tshark dissects it from that fragment. Before, the QUIC packet was not mentioned at all.
    @Test func aFragmentedInitialMissingAPieceIsNamedByItsVersion() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: CLI.capture("h3-sample.pcap")))
        let length = Int(data[24 + 8]) | Int(data[24 + 9]) << 8 | Int(data[24 + 10]) << 16 | Int(data[24 + 11]) << 24
        let frame = [UInt8](data[(24 + 16)..<(24 + 16 + length)])
        try #require(frame.count > 14 + 20 + 8 + 1000 && frame[14] == 0x45 && frame[14 + 9] == 17, "an IPv4 UDP datagram of the client's Initial")
        // Its first fragment: the IP header with More Fragments set, the UDP header and 592 bytes.
        var ip = Array(frame[14..<(14 + 20)])
        let body = Array(frame[(14 + 20)..<(14 + 20 + 600)])
        let total = 20 + body.count
        ip[2] = UInt8(total >> 8); ip[3] = UInt8(total & 0xff)
        ip[6] = 0x20; ip[7] = 0            // MF, offset 0
        ip[10] = 0; ip[11] = 0
        var sum = 0
        for i in stride(from: 0, to: 20, by: 2) { sum += Int(ip[i]) << 8 | Int(ip[i + 1]) }
        while sum > 0xffff { sum = (sum & 0xffff) + (sum >> 16) }
        ip[10] = UInt8((~sum >> 8) & 0xff); ip[11] = UInt8(~sum & 0xff)
        let packet = Array(frame[0..<14]) + ip + body
        var record = Data(data[24..<(24 + 8)])
        for v in [packet.count, packet.count] { record += Data([UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24 & 0xff)]) }
        let file = CLI.temporaryDirectory().appendingPathComponent("fragment.pcap")
        try (data.prefix(24) + record + Data(packet)).write(to: file)
        let r = try CLI.run(["-r", file.path])
        #expect(r.status == 0 && r.stderr.contains("fragment_reassembly_timeout×1"), "\(r.stderr)")
        #expect(r.stderr.contains("QUIC Initials not read: QUIC v1×1"), "\(r.stderr)")
    }

    @Test func keylessConnectionIsListedAndCounted() throws {
        let r = try CLI.run(["-r", capture, "--connections", "--format", "tsv"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = r.text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        try #require(rows.count == 2, "\(r.text)")
        let row = Dictionary(uniqueKeysWithValues: zip(rows[0], rows[1]))
        #expect(row["transport"] == "quic" && row["sni"] == "www.icy.test" && row["tls_version"] == "QUIC v1")
        #expect(row["cipher"] == "TLS_AES_256_GCM_SHA384")
        #expect(r.stderr.contains("1 QUIC connection; 1 encrypted (--keylog FILE decrypts them"), "\(r.stderr)")
    }

    /// A client's first Initial lost, or one bit of it flipped. Without keys its connection
    /// cannot be followed, and that is said (an unreadable Initial, the datagrams no connection
    /// took). With the key log, its secrets are found by trying the key log's handshake secrets
    /// on a Handshake packet of it, and all its transactions come back, the connection flagged
    /// `quic_keys_found_by_search` (before, it and its six transactions vanished without a word,
    /// key log or not). The other connection of the capture is read as before.
    @Test func aLostOrDamagedFirstInitialIsSaidAndFoundInTheKeyLog() throws {
        let sample = CLI.capture("h3-sample.pcap"), keys = CLI.capture("h3-sample.keys")
        let data = try Data(contentsOf: URL(fileURLWithPath: sample))
        var packets: [Data] = []
        var at = 24
        while at + 16 <= data.count {
            let length = Int(data[at + 8]) | Int(data[at + 9]) << 8 | Int(data[at + 10]) << 16 | Int(data[at + 11]) << 24
            packets.append(data[at..<(at + 16 + length)])
            at += 16 + length
        }
        let dir = CLI.temporaryDirectory()
        let lost = dir.appendingPathComponent("lost.pcap"), flipped = dir.appendingPathComponent("flipped.pcap")
        try (data.prefix(24) + packets.dropFirst().reduce(Data(), +)).write(to: lost)
        var first = Data(packets[0])
        first[first.startIndex + first.count - 30] ^= 0x10
        try (data.prefix(24) + first + packets.dropFirst().reduce(Data(), +)).write(to: flipped)
        let whole = try CLI.run(["-r", sample, "--keylog", keys, "--format", "tsv"])
        #expect(whole.stderr.contains("8 HTTP transactions, 2 QUIC connections") && !whole.stderr.contains("quic_"), "\(whole.stderr)")
        for (file, initial) in [(lost, false), (flipped, true)] {
            let keyless = try CLI.run(["-r", file.path, "--format", "tsv"])
            #expect(keyless.status == 0 && keyless.stderr.contains("0 HTTP transactions, 1 QUIC connection; 1 encrypted"), "\(keyless.stderr)")
            #expect(keyless.stderr.contains("quic_datagram_unmatched×"), "\(file.lastPathComponent): \(keyless.stderr)")
            #expect(keyless.stderr.contains("quic_initial_unreadable×1") == initial, "\(file.lastPathComponent): \(keyless.stderr)")
            // The damaged Initial's version, from its cleartext header, as tshark shows it.
            #expect(keyless.stderr.contains("QUIC Initials not read: QUIC v1×1") == initial, "\(file.lastPathComponent): \(keyless.stderr)")

            let r = try CLI.run(["-r", file.path, "--keylog", keys, "--format", "tsv", "--fields", "client,url,status"])
            #expect(r.status == 0 && r.stderr.contains("8 HTTP transactions, 2 QUIC connections (2 decrypted)"), "\(r.stderr)")
            #expect(r.stderr.contains("quic_keys_found_by_search×1") && !r.stderr.contains("quic_datagram_unmatched"), "\(r.stderr)")
            // The same requests and statuses (the connection found at the end of the capture, when
            // its orphaned Handshake packet was given up on, comes last).
            #expect(r.text.split(separator: "\n").dropFirst().map { $0.split(separator: "\t").dropFirst().joined(separator: "\t") }.sorted()
                    == whole.text.split(separator: "\n").dropFirst().map { row in
                        let cells = row.split(separator: "\t", omittingEmptySubsequences: false)
                        return [cells[3], cells[4]].joined(separator: "\t")
                    }.sorted(), "\(r.text)")
            let c = try CLI.run(["-r", file.path, "--keylog", keys, "--connections", "--format", "ndjson", "--quiet"])
            let rows = c.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let found = try #require(rows.first { ($0["anomalies"] as? [String])?.contains("quic_keys_found_by_search") == true }, "\(c.text)")
            let quic = try #require(found["quic"] as? [String: Any])
            // The sides the right way round: the client's port is the one the whole capture says.
            #expect((found["client"] as? String) == "127.0.0.1:36942" && (quic["decrypted"] as? Bool) == true, "\(found)")
            #expect((quic["alpn"] as? String) == "h3" && quic["sni"] is NSNull, "ALPN from the server's EncryptedExtensions; the SNI was in the lost hello")
        }
    }

    /// One definition of "decrypted": its application data opened. With the handshake's secrets
    /// alone a connection was "decrypted" in the summary and `quic_keys_not_found` on the same
    /// line; it is encrypted, and the line says the key log lacks its traffic secrets.
    @Test func handshakeSecretsAloneLeaveAConnectionEncrypted() throws {
        let keys = try String(contentsOfFile: CLI.capture("h3-sample.keys"), encoding: .utf8)
        let handshakeOnly = CLI.temporaryDirectory().appendingPathComponent("hs.keys")
        try keys.split(separator: "\n").filter { $0.contains("HANDSHAKE") }.joined(separator: "\n").write(to: handshakeOnly, atomically: true, encoding: .utf8)
        let r = try CLI.run(["-r", CLI.capture("h3-sample.pcap"), "--keylog", handshakeOnly.path, "--format", "tsv"])
        #expect(r.stderr.contains("2 QUIC connections; 2 encrypted (the key log lacks their traffic secrets") && r.stderr.contains("quic_keys_not_found×2"),
                "\(r.stderr)")
        #expect(!r.stderr.contains("decrypted"), "\(r.stderr)")
        let c = try CLI.run(["-r", CLI.capture("h3-sample.pcap"), "--keylog", handshakeOnly.path, "--connections", "--format", "ndjson", "--quiet"])
        let rows = c.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.count == 2 && rows.allSatisfy { (($0["quic"] as? [String: Any])?["decrypted"] as? Bool) == false }, "\(c.text)")
    }

    @Test func keyedHARHasHTTP3Entries() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--har", "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let har = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let log = try #require(har["log"] as? [String: Any])
        let entries = try #require(log["entries"] as? [[String: Any]])
        #expect(entries.count == 13)
        let versions = Set(entries.compactMap { ($0["response"] as? [String: Any])?["httpVersion"] as? String })
        #expect(versions == ["HTTP/3"])
        let connections = try #require(log["_connections"] as? [[String: Any]])
        let quic = try #require(connections.first?["quic"] as? [String: Any])
        #expect(connections.first?["transport"] as? String == "quic")
        #expect(quic["version"] as? String == "QUIC v1" && quic["alpn"] as? String == "h3" && quic["keyUpdates"] as? Int == 0)
        // The first request's connect is the QUIC handshake, ssl inside it.
        let first = try #require(entries.min { ($0["startedDateTime"] as? String ?? "") < ($1["startedDateTime"] as? String ?? "") })
        let timings = try #require(first["timings"] as? [String: Any])
        let ssl = try #require(timings["ssl"] as? Double), connect = try #require(timings["connect"] as? Double)
        #expect(ssl > 0 && connect >= ssl)
    }

    /// The report says first what the capture was: here one device, HTTP/3, or (without keys)
    /// QUIC connections whose requests are not seen (issue 30).
    @Test func reportSaysWhatTheCaptureWas() throws {
        let keyless = try CLI.run(["report", "-r", capture])
        #expect(keyless.text.split(separator: "\n").dropFirst().first?.hasPrefix("Capture: ") == true, "\(keyless.text)")
        #expect(keyless.text.contains("encrypted, requests not seen: 1 QUIC connection\n"), "\(keyless.text)")
        #expect(keyless.text.contains("QUIC: 1 connection (handshakes only: not decrypted)"))
        let keyed = try CLI.run(["report", "-r", capture, "--keylog", keys])
        #expect(keyed.text.contains("1 device, 1 host; 13 h3\n"), "\(keyed.text)")
    }

    /// How QUIC connections ended, in the report: a server that lost its state and answered
    /// with stateless resets (a load balancer that moved the flow) is worth seeing at once.
    @Test func reportSaysHowQUICConnectionsEnded() throws {
        let fixture = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/quic/stateless-reset").path
        let keyed = try CLI.run(["report", "-r", fixture + ".pcap", "--keylog", fixture + ".keys"])
        #expect(keyed.text.contains("\n  ended: stateless reset 2\n"), "\(keyed.text)")
        let json = try CLI.run(["report", "-r", fixture + ".pcap", "--keylog", fixture + ".keys", "--format", "json"])
        let reports = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]])
        let quic = try #require(reports.first?["quic"] as? [String: Any])
        #expect(quic["ends"] as? [String: Int] == ["stateless_reset": 2])
        // Without keys the tokens are not seen: they ended idle as far as the capture shows.
        let keyless = try CLI.run(["report", "-r", fixture + ".pcap"])
        #expect(keyless.text.contains("\n  ended: idle 2\n"), "\(keyless.text)")
    }

    @Test func tableNamesTheProtocol() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--format", "tsv", "--fields", "method,url,status,protocol", "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.text.split(separator: "\n")
        #expect(lines.count == 14)
        #expect(lines.dropFirst().allSatisfy { $0.hasSuffix("\th3") })
        #expect(lines.contains("DELETE\thttps://www.icy.test/app.js\t405\th3"))
    }
}

/// captures/h3-sample.pcap: another implementation (ngtcp2, nghttp3, GnuTLS), recorded on the
/// sending host: packets coalesced by UDP GSO into one datagram, short headers with a greased
/// fixed bit. Every request is found.
@Suite struct QUICSampleTests {
    @Test func ngtcp2SampleWithGSOAndGreasedBit() throws {
        let r = try CLI.run(["-r", CLI.capture("h3-sample.pcap"), "--keylog", CLI.capture("h3-sample.keys"), "--format", "tsv",
                             "--fields", "url,status,protocol,size"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = r.text.split(separator: "\n").dropFirst().map { $0.split(separator: "\t").map(String.init) }
        #expect(rows.count == 8, "\(r.text)")
        #expect(rows.allSatisfy { $0[2] == "h3" })
        #expect(rows.filter { $0[1] == "200" }.count == 7 && rows.filter { $0[1] == "404" }.count == 1)
        #expect(rows.contains { $0[0].hasSuffix("/img/2.png") && $0[3] == "24000" })
        #expect(r.stderr.contains("2 QUIC connections (2 decrypted)"), "\(r.stderr)")
    }
}
