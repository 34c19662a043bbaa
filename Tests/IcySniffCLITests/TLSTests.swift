import Foundation
import Testing

/// TLS connections without keys, on a real capture (curl and openssl s_server, recorded with
/// scripts/record-tls-sample): listed with their handshakes, counted, reported — never
/// mistaken for HTTP.
@Suite struct TLSTests {
    let capture = CLI.capture("tls-sample.pcap")

    @Test func connectionsListTheHandshakes() throws {
        let r = try CLI.run(["-r", capture, "--connections", "--format", "tsv"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = r.text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        try #require(rows.count == 4 && rows.allSatisfy { $0.count == 23 }, "\(r.text)")
        let header = rows[0]
        func column(_ name: String) throws -> [String] {
            let i = try #require(header.firstIndex(of: name), "column \(name)")
            return rows.dropFirst().map { $0[i] }
        }
        #expect(try column("tls_version") == ["TLS 1.3", "TLS 1.2", "TLS 1.2"])
        #expect(try column("sni") == ["tls.icy.test", "tls.icy.test", "tls.icy.test"])
        #expect(try column("resumed") == ["no", "no", "session-id"])
        #expect(try column("anomalies").allSatisfy { !$0.contains("unexpected") }, "TLS is not taken for HTTP")
        #expect(try column("tls_handshake_ms").allSatisfy { (Double($0) ?? -1) > 0 })
        // Each connection's duration (first packet to last, ms), as the HAR's _connections has it.
        let har = try JSONSerialization.jsonObject(with: CLI.run(["-r", capture, "--har", "--quiet"]).stdout) as? [String: Any]
        let listed = (har?["log"] as? [String: Any])?["_connections"] as? [[String: Any]] ?? []
        #expect(try column("duration_ms").compactMap(Double.init) == listed.compactMap { ($0["duration"] as? Double).map { ($0 * 1000).rounded() / 1000 } })
        #expect(try column("duration_ms").allSatisfy { (Double($0) ?? 0) > 1 })
        #expect(r.stderr.contains("3 TLS connections"), "\(r.stderr)")
    }

    @Test func harListsTLSConnectionsWithoutEntries() throws {
        let r = try CLI.run(["-r", capture, "--har", "--quiet"])
        #expect(r.status == 0)
        let har = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let log = try #require(har["log"] as? [String: Any])
        #expect((log["entries"] as? [Any])?.isEmpty == true, "no entry for an undecrypted connection")
        let connections = try #require(log["_connections"] as? [[String: Any]])
        #expect(connections.count == 3)
        let tls = connections.compactMap { $0["tls"] as? [String: Any] }
        #expect(tls.count == 3)
        #expect(tls.map { $0["cipher"] as? String } == ["TLS_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                                                         "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"])
        #expect(tls.allSatisfy { ($0["alpnOffered"] as? [String])?.contains("http/1.1") == true })
        #expect(tls.first?["earlyData"] is NSNull, "unknown for TLS 1.3 without keys")
        #expect(tls.last?["resumed"] as? Bool == true)
        #expect(tls.allSatisfy { $0["decrypted"] as? Bool == false })
    }

    @Test func reportHasATLSSection() throws {
        let r = try CLI.run(["report", "-r", capture, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let reports = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        let tls = try #require(reports.first?["tls"] as? [String: Any])
        #expect(tls["connections"] as? Int == 3 && tls["resumed"] as? Int == 1)
        #expect((tls["versions"] as? [String: Int]) == ["TLS 1.2": 2, "TLS 1.3": 1])
        let hosts = try #require(tls["hosts"] as? [[String: Any]])
        #expect(hosts.first?["sni"] as? String == "tls.icy.test" && hosts.first?["sequentialConnections"] as? Int == 2)
        #expect(tls["decrypted"] as? Int == 0)
        let text = try CLI.run(["report", "-r", capture])
        #expect(text.text.contains("TLS: 3 connections (handshakes only: not decrypted)"), "\(text.text)")
        // With the key log the report says so (it said "not decrypted" whatever happened).
        let keyed = try CLI.run(["report", "-r", capture, "--keylog", keys])
        #expect(keyed.text.contains("TLS: 3 connections (all decrypted), 1 resumed"), "\(keyed.text)")
    }

    let keys = CLI.capture("tls-sample.keys")

    /// With curl's key log: the HTTP/1.1 inside TLS 1.3 and 1.2 (resumed too), as https
    /// transactions timed like cleartext ones, with the handshake as timings.ssl.
    @Test func keyLogDecryptsTheTransactions() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--har"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("3 TLS connections (3 decrypted)"), "\(r.stderr)")
        let har = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let log = try #require(har["log"] as? [String: Any])
        let entries = try #require(log["entries"] as? [[String: Any]])
        try #require(entries.count == 3)
        for e in entries {
            let request = try #require(e["request"] as? [String: Any]), response = try #require(e["response"] as? [String: Any])
            #expect(request["method"] as? String == "GET")
            #expect(request["url"] as? String == "https://tls.icy.test:44330/")
            #expect(response["status"] as? Int == 200)
            #expect(((response["content"] as? [String: Any])?["size"] as? Int ?? 0) > 1000, "the s_server status page")
            let t = try #require(e["timings"] as? [String: Any])
            let ssl = try #require(t["ssl"] as? Double), connect = try #require(t["connect"] as? Double)
            #expect(ssl > 0 && connect >= ssl, "HAR 1.2: ssl is part of connect (\(t))")
        }
        let tls = (log["_connections"] as? [[String: Any]] ?? []).compactMap { $0["tls"] as? [String: Any] }
        #expect(tls.count == 3 && tls.allSatisfy { $0["decrypted"] as? Bool == true })
        #expect(tls.first?["earlyData"] as? Bool == false, "known with keys")
        // Key material never appears in an output.
        let secrets = try String(contentsOfFile: keys, encoding: .utf8).split(separator: "\n").compactMap { $0.split(separator: " ").last }
        #expect(!secrets.isEmpty)
        for secret in secrets { #expect(!r.text.contains(String(secret)) && !r.stderr.contains(String(secret))) }
    }

    /// Wrong keys give a clear flag, never garbage: a key log with every secret changed.
    @Test func wrongKeysAreFlaggedNotDecodedAsGarbage() throws {
        let text = try String(contentsOfFile: keys, encoding: .utf8)
        let wrong = text.split(separator: "\n").map { line -> String in
            var parts = line.split(separator: " ").map(String.init)
            guard parts.count == 3 else { return String(line) }
            parts[2] = String(parts[2].reversed())
            return parts.joined(separator: " ")
        }.joined(separator: "\n")
        let path = CLI.temporaryDirectory().appendingPathComponent("wrong.keys")
        try wrong.write(to: path, atomically: true, encoding: .utf8)
        let r = try CLI.run(["-r", capture, "--keylog", path.path, "--format", "ndjson"])
        #expect(r.status == 0)
        let rows = r.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.allSatisfy { $0["type"] as? String == "connection" }, "no transaction from bytes that did not authenticate: \(r.text)")
        #expect(rows.count == 3 && rows.allSatisfy { $0["event"] as? String == "end" && $0["keys"] as? String == "decryption_failed" },
                "each connection ends encrypted, saying why: \(r.text)")
        #expect(r.stderr.contains("tls_decryption_failed"), "\(r.stderr)")
        // Keys for other connections only: the connections are named, not decrypted.
        let others = CLI.temporaryDirectory().appendingPathComponent("other.keys")
        try "CLIENT_RANDOM \(String(repeating: "ab", count: 32)) \(String(repeating: "cd", count: 48))\n".write(to: others, atomically: true, encoding: .utf8)
        let o = try CLI.run(["-r", capture, "--keylog", others.path, "--connections", "--format", "tsv"])
        #expect(o.text.components(separatedBy: "tls_keys_not_found").count - 1 == 3, "\(o.text)")
        let missing = try CLI.run(["-r", capture, "--keylog", "/nonexistent.keys"])
        #expect(missing.status == 2 && missing.stderr.hasPrefix("icy-sniff: cannot read key log '/nonexistent.keys'"), "\(missing.stderr)")
    }

    /// A file that is no key log (README.md) is named at once, and the summary does not advise
    /// --keylog to a user who gave one (issue 30).
    @Test func aKeyLogWithoutSecretsIsNamed() throws {
        let r = try CLI.run(["-r", capture, "--keylog", CLI.packageRoot.appendingPathComponent("README.md").path])
        #expect(r.status == 0)
        #expect(r.stderr.contains("README.md' holds no secrets ("), "\(r.stderr)")
        #expect(r.stderr.contains("the key log holds no secrets: ") && r.stderr.contains(" of it are not key log lines")
                && !r.stderr.contains("--keylog FILE decrypts"), "\(r.stderr)")
        // A key log of other connections says so, with what it holds (issue 31, item 11).
        let other = try CLI.run(["-r", capture, "--keylog", CLI.capture("h3-sample.keys")])
        #expect(other.stderr.contains("3 encrypted (the key log lacks their traffic secrets: it holds secrets of 2 connections, from 10 lines;"), "\(other.stderr)")
    }

    /// One byte of an encrypted record changed in the capture: that direction stops being
    /// decrypted at that record (flagged), the other connections are unaffected.
    @Test func aTamperedRecordIsFlagged() throws {
        var data = try Data(contentsOf: URL(fileURLWithPath: capture))
        // The last application-data record of the capture's first connection's server side is
        // inside its largest packet: flip a byte in the middle of the largest packet.
        var offset = 24, largest = (offset: 0, length: 0)
        while offset + 16 <= data.count {
            let caplen = Int(data[offset + 8]) | Int(data[offset + 9]) << 8 | Int(data[offset + 10]) << 16 | Int(data[offset + 11]) << 24
            if caplen > largest.length { largest = (offset + 16, caplen) }
            offset += 16 + caplen
        }
        data[largest.offset + largest.length - 40] ^= 0x01
        let path = CLI.temporaryDirectory().appendingPathComponent("tampered.pcap")
        try data.write(to: path)
        let r = try CLI.run(["-r", path.path, "--keylog", keys, "--format", "ndjson"])
        #expect(r.status == 0)
        #expect(r.stderr.contains("tls_decryption_failed×1"), "\(r.stderr)")
        let rows = r.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.count == 3, "the request is still there")
        #expect(rows.filter { ($0["status"] as? Int) == 200 }.count == 2, "the tampered response is not")
    }

    /// Keys embedded in a pcapng Decryption Secrets Block (editcap --inject-secrets) are used
    /// without any option, gzip-compressed too.
    @Test func decryptionSecretsBlocksAreUsedWithoutAnOption() throws {
        let dsb = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/tls/tls-sample-dsb.pcapng").path
        let gz = CLI.temporaryDirectory().appendingPathComponent("dsb.pcapng.gz").path
        let zip = try CLI.run(["sh", "-c", "gzip -c \"$0\" > \"$1\"", dsb, gz], executable: "/usr/bin/env")
        #expect(zip.status == 0)
        for path in [dsb, gz] {
            let r = try CLI.run(["-r", path, "--format", "tsv", "--fields", "method,url,status,tls_version"])
            #expect(r.status == 0, "\(r.stderr)")
            let rows = r.text.split(separator: "\n").dropFirst().map(String.init)
            #expect(rows == ["GET\thttps://tls.icy.test:44330/\t200\tTLS 1.3", "GET\thttps://tls.icy.test:44330/\t200\tTLS 1.2",
                             "GET\thttps://tls.icy.test:44330/\t200\tTLS 1.2"], "\(path): \(r.text)")
            #expect(r.stderr.contains("(3 decrypted)"), "\(r.stderr)")
        }
    }

    /// The JA4 of every TLS and QUIC ClientHello (JA4Tests check the reading against FoxIO's
    /// specification): the same value in --connections TSV and NDJSON, the HAR's
    /// `_connections` (in `tls`, and in `quic` for QUIC) and report's devices; `q` for QUIC,
    /// `t` for TLS over TCP, the version, SNI and ALPN parts as the handshake has them.
    @Test func ja4InEveryOutputOfAConnection() throws {
        for (capture, prefix) in [("tls-sample.pcap", "t1"), ("h3-sample.pcap", "q13d")] {
            let path = CLI.capture(capture)
            let tsv = try CLI.run(["-r", path, "--connections", "--format", "tsv", "--fields", "id,sni,ja4,ech", "--quiet"])
            let rows = tsv.text.split(separator: "\n").dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            try #require(!rows.isEmpty, "\(tsv.text)")
            let shape = #/^[qt](13|12|11|10|s3|s2|00)[di]\d{4}[0-9A-Za-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$/#
            for row in rows {
                #expect(row[2].hasPrefix(prefix) && row[2].wholeMatch(of: shape) != nil, "\(capture): \(row)")
                #expect(row[2].dropFirst(3).first == (row[1].isEmpty ? "i" : "d"), "SNI part: \(row)")
                #expect(row[3] == "", "no encrypted_client_hello in these hellos")
            }
            let ndjson = try CLI.run(["-r", path, "--connections", "--format", "ndjson", "--quiet"])
            let objects = ndjson.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(objects.map { (($0["tls"] as? [String: Any])?["ja4"] as? String) ?? "" } == rows.map { $0[2] })
            let har = try #require(try JSONSerialization.jsonObject(with: CLI.run(["-r", path, "--har", "--quiet"]).stdout) as? [String: Any])
            let connections = try #require((har["log"] as? [String: Any])?["_connections"] as? [[String: Any]])
            #expect(connections.map { (($0["quic"] as? [String: Any])?["ja4"] ?? ($0["tls"] as? [String: Any])?["ja4"]) as? String ?? "" } == rows.map { $0[2] })
            let report = try JSONSerialization.jsonObject(with: CLI.run(["report", "-r", path, "--format", "json"]).stdout) as? [[String: Any]]
            let devices = try #require(report?.first?["devices"] as? [[String: Any]])
            let listed = devices.flatMap { ($0["ja4"] as? [[String: Any]]) ?? [] }
            #expect(Set(listed.compactMap { $0["ja4"] as? String }) == Set(rows.map { $0[2] }))
            #expect(listed.compactMap { $0["connections"] as? Int }.reduce(0, +) == rows.count)
        }
    }

    /// Without keys, HTTP/1.1 over TLS is estimated from its records' sizes and times (issue
    /// 52): one NDJSON row per exchange, `"inferred": true`, no method or status, whose
    /// response_bytes is the decrypted response's head and body to the byte and whose start is
    /// the request's; the `--connections` row says the protocol inside (h2 told from HTTP/2's
    /// SETTINGS records in TLS 1.3, whose ALPN is encrypted) and the count. With the key log,
    /// the decrypted transactions replace the estimates. TLS 1.2 and 1.3, nginx and s_server.
    @Test func keylessExchangesAreEstimatedFromRecords() throws {
        let cases = [(CLI.capture("tls-sample.pcap"), CLI.capture("tls-sample.keys")),
                     (CLI.packageRoot.appendingPathComponent("Tests/Fixtures/tls/nginx-curl-live.pcap").path,
                      CLI.packageRoot.appendingPathComponent("Tests/Fixtures/tls/nginx-curl-live.keys").path)]
        func rows(_ text: String) -> [[String: Any]] {
            text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        var checked = 0
        for (capture, keys) in cases {
            let har = try #require(try JSONSerialization.jsonObject(with: CLI.run(["-r", capture, "--keylog", keys, "--har", "--quiet"]).stdout) as? [String: Any])
            let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
            var truth: [String: [Int]] = [:], protocols: [String: String] = [:], requests: [String: Int] = [:]
            for e in entries {
                let response = try #require(e["response"] as? [String: Any]), connection = try #require(e["connection"] as? String)
                requests[connection, default: 0] += 1
                let version = (response["httpVersion"] as? String ?? "").lowercased()
                protocols[connection] = version.hasPrefix("http/2") || version == "h2" ? "h2" : "http/1.1"
                truth[connection, default: []].append(max(0, response["headersSize"] as? Int ?? 0) + max(0, response["bodySize"] as? Int ?? 0))
            }
            let keyless = rows(try CLI.run(["-r", capture, "--format", "ndjson", "--quiet"]).text)
            // Without keys: estimates and the connections' own rows (`"type": "connection"`).
            let estimated = keyless.filter { $0["type"] == nil }
            #expect(!estimated.isEmpty && estimated.allSatisfy { $0["inferred"] as? Bool == true && $0["method"] is NSNull && $0["status"] is NSNull },
                    "\(capture): without keys, estimates only")
            var sizes: [String: [Int?]] = [:]
            for r in estimated { sizes[r["connection"] as? String ?? "", default: []].append(r["response_bytes"] as? Int) }
            #expect(sizes.filter { protocols[$0.key] == "http/1.1" } == truth.filter { protocols[$0.key] == "http/1.1" },
                    "\(capture): HTTP/1.1's response head and body to the byte")
            // HTTP/2: a row a request; a request sent once the previous response had come (curl
            // one after another) is alone, its response block and DATA within 10 % or 100 bytes.
            for (id, h2) in sizes where protocols[id] == "h2" {
                #expect(h2.count == truth[id]?.count, "\(capture) \(id): \(h2) for \(truth[id] ?? [])")
                for (estimate, real) in zip(h2, truth[id] ?? []) {
                    let bytes = try #require(estimate, "\(capture) \(id): requests one after another are alone")
                    #expect(abs(bytes - real) <= max(100, real / 10), "\(capture) \(id): \(bytes) for \(real)")
                }
            }
            let connections = rows(try CLI.run(["-r", capture, "--connections", "--format", "ndjson", "--quiet"]).text)
            for c in connections {
                let id = try #require(c["id"] as? String), inferred = try #require(c["inferred"] as? [String: Any], "\(c)")
                #expect(inferred["protocol"] as? String == protocols[id], "\(capture) \(id): \(inferred)")
                if protocols[id] == "http/1.1" {
                    #expect(inferred["exchanges"] as? Int == truth[id]?.count && inferred["exchanges_exact"] as? Bool == true, "\(inferred)")
                } else {
                    // HTTP/2: a count of the client's records that carry requests, never said exact.
                    #expect(inferred["exchanges"] as? Int == requests[id] && inferred["exchanges_exact"] as? Bool == false, "\(inferred)")
                }
                checked += 1
            }
            // --har-estimates: the same estimates as HAR entries, marked, in time order, valid HAR
            // timings (time = send + wait + receive); without it, none (HAR consumers replay entries).
            let withEstimates = try #require(try JSONSerialization.jsonObject(with: CLI.run(["-r", capture, "--har", "--har-estimates", "--quiet"]).stdout) as? [String: Any])
            let estimateEntries = try #require((withEstimates["log"] as? [String: Any])?["entries"] as? [[String: Any]])
            #expect(estimateEntries.count == estimated.count && estimateEntries.allSatisfy { $0["_inferred"] as? Bool == true }, "\(capture)")
            #expect(estimateEntries.map { ($0["response"] as? [String: Any])?["_messageBytes"] as? Int } == estimated.sorted { ($0["ts"] as? String ?? "") < ($1["ts"] as? String ?? "") }.map { $0["response_bytes"] as? Int })
            for e in estimateEntries {
                let t = try #require(e["timings"] as? [String: Double])
                #expect(abs((e["time"] as? Double ?? -1) - ((t["send"] ?? 0) + (t["wait"] ?? 0) + (t["receive"] ?? 0))) < 0.01)
            }
            let plainRun = try CLI.run(["-r", capture, "--har"])
            let plain = try #require(try JSONSerialization.jsonObject(with: plainRun.stdout) as? [String: Any])
            #expect(((plain["log"] as? [String: Any])?["entries"] as? [Any])?.isEmpty == true)
            // The summary says where they are: not in a HAR unless asked (it said "inferred" rows).
            #expect(plainRun.stderr.contains("; \(estimated.count) exchange") && plainRun.stderr.contains("estimated from encrypted records (not in the HAR: --har-estimates adds them"), "\(plainRun.stderr)")
            #expect(try CLI.run(["-r", capture, "--har", "--har-estimates"]).stderr.contains("(HAR entries with _inferred)"))
            #expect(try CLI.run(["-r", capture, "--format", "ndjson"]).stderr.contains("estimated from encrypted records (\"inferred\" rows)"))
            let keyed = rows(try CLI.run(["-r", capture, "--keylog", keys, "--format", "ndjson", "--quiet"]).text)
            #expect(keyed.count == entries.count && keyed.allSatisfy { $0["inferred"] == nil && $0["type"] == nil }, "with keys, transactions instead")
            let keyedConnections = rows(try CLI.run(["-r", capture, "--keylog", keys, "--connections", "--format", "ndjson", "--quiet"]).text)
            #expect(keyedConnections.allSatisfy { $0["inferred"] == nil })
        }
        #expect(checked == 6)
    }

    /// Without keys, each TLS or QUIC connection is a row of the default output when its
    /// ServerHello shows that no key opens it, and again when it ends (issue 52), in every
    /// tabular format: its time, client, SNI, version and ALPN, then its bytes, duration and the
    /// exchanges its records show — the figures of its `--connections` row. A key log that opens
    /// it replaces both rows by its transactions; a filter of devices keeps them, one of HTTP
    /// fields does not.
    @Test func keylessConnectionsAreRowsAtTheirHandshakeAndEnd() throws {
        func rows(_ text: String) -> [[String: Any]] {
            text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        for (name, transport, version) in [("tls-sample.pcap", "tcp", "TLS 1"), ("h3-sample.pcap", "quic", "QUIC v1")] {
            let capture = CLI.capture(name)
            let out = rows(try CLI.run(["-r", capture, "--format", "ndjson", "--quiet"]).text)
            let events = out.filter { $0["type"] as? String == "connection" }
            let listed = rows(try CLI.run(["-r", capture, "--connections", "--format", "ndjson", "--quiet"]).text)
            try #require(!listed.isEmpty && events.count == 2 * listed.count, "\(name): \(events)")
            for c in listed {
                let id = c["id"] as! String
                let mine = events.filter { $0["connection"] as? String == id }
                try #require(mine.map { $0["event"] as! String } == ["handshake", "end"], "\(name) \(id): \(mine)")
                let (open, end) = (mine[0], mine[1])
                let tls = try #require((c["tls"] ?? c["quic"]) as? [String: Any])
                #expect(open["ts"] as? String == (c["tls"] as? [String: Any])?["handshakeStart"] as? String, "the handshake's first byte")
                #expect(end["ts"] as? String != nil && (end["ts"] as! String) >= (open["ts"] as! String))
                for r in mine {
                    #expect(r["transport"] as? String == transport && (r["tls_version"] as? String ?? "").hasPrefix(version), "\(r)")
                    #expect(r["sni"] as? String == tls["sni"] as? String && r["keys"] as? String == "none")
                    #expect((r["alpn_offered"] as? [String]) == (tls["alpnOffered"] as? [String]))
                    #expect(r["ja4"] as? String == tls["ja4"] as? String && r["ja4"] != nil)
                }
                #expect(end["bytes_from_client"] as? Int == c["bytes_from_client"] as? Int && end["bytes_from_server"] as? Int == c["bytes_from_server"] as? Int)
                #expect((end["duration_ms"] as? Double ?? 0) > 0 && end["duration_ms"] as? Double == c["duration_ms"] as? Double)
                let inferred = try #require(c["inferred"] as? [String: Any])
                #expect(end["protocol"] as? String == inferred["protocol"] as? String)
                #expect((end["exchanges"] as? Int) == (inferred["exchanges"] as? Int))
                #expect(out.filter { $0["inferred"] as? Bool == true && $0["connection"] as? String == id }.count == inferred["exchanges"] as? Int)
            }
            // The table: the handshake and the end as a person reads them.
            let table = try CLI.run(["-r", capture, "--format", "table", "--quiet"]).text.split(separator: "\n")
            #expect(table.filter { $0.contains(" handshake, offers ") && $0.hasSuffix("; no key") }.count == listed.count, "\(table)")
            #expect(table.filter { $0.contains("ended after ") && $0.contains(" B ↓") }.count == listed.count, "\(table)")
            // TSV: flags name the rows, sizes and duration in their columns.
            let tsv = try CLI.run(["-r", capture, "--format", "tsv", "--fields", "connection,req_size,size,flags", "--quiet"]).text
            let ends = tsv.split(separator: "\n").filter { $0.hasSuffix("encrypted_connection,end") }.map { $0.split(separator: "\t").map(String.init) }
            #expect(Set(ends.map { "\($0[0]) \($0[1]) \($0[2])" }) == Set(listed.map { "\($0["id"]!) \($0["bytes_from_client"]!) \($0["bytes_from_server"]!)" }))
            // A device filter keeps them; an HTTP one (status) has nothing to match them with.
            let device = rows(try CLI.run(["-r", capture, "--client", "127.0.0.1", "--format", "ndjson", "--quiet"]).text)
            #expect(device.filter { $0["type"] as? String == "connection" }.count == events.count)
            let other = rows(try CLI.run(["-r", capture, "--client", "10.9.9.9", "--format", "ndjson", "--quiet"]).text)
            #expect(other.isEmpty)
            let status = rows(try CLI.run(["-r", capture, "--status", "200", "--format", "ndjson", "--quiet"]).text)
            #expect(status.isEmpty)
            // With the key log: transactions, no connection rows.
            let keys = CLI.capture(name.replacingOccurrences(of: ".pcap", with: ".keys"))
            let keyed = rows(try CLI.run(["-r", capture, "--keylog", keys, "--format", "ndjson", "--quiet"]).text)
            #expect(!keyed.isEmpty && keyed.allSatisfy { $0["type"] == nil && $0["inferred"] == nil && $0["method"] as? String != nil }, "\(name)")
        }
    }
}
