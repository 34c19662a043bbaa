import Testing
@testable import IcySniffCore

/// HTTP inside proxy tunnels (issue 18): after a CONNECT answered 2xx and after a SOCKS4, 4a or
/// 5 handshake, what the tunnel carries is chosen by content and its transactions are found,
/// flagged `tunnelled`, with URLs that name the target; refused requests and opaque tunnels give
/// no transactions, and the connection says what was seen. Every conversation is also cut into
/// segments of 1, 2, 3 and 7 bytes: the handshakes must be read across any segmenting.
@Suite struct ProxyTunnelTests {
    static let request = Array("GET /x HTTP/1.1\r\nHost: origin.test\r\n\r\n".utf8)
    static let requestWithoutHost = Array("GET /x HTTP/1.0\r\n\r\n".utf8)
    static let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8)

    func run(_ blocks: [(Transcript.Side, [UInt8])]) -> [(segment: Int, sink: CollectingSink)] {
        [0, 1, 2, 3, 7].map { ($0, Transcript(blocks: blocks).collect(segmentSize: $0)) }
    }

    static func socks5Request(host: String, port: UInt16) -> [UInt8] {
        [5, 1, 0, 3, UInt8(host.utf8.count)] + Array(host.utf8) + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }
    static let socks5Granted: [UInt8] = [5, 0, 0, 1, 0, 0, 0, 0, 0, 0]

    @Test func socks5WithPasswordCarriesHTTP() {
        // Greeting (no auth, user/password), the server picks user/password (RFC 1929), then the
        // request for a host name; the password must appear nowhere.
        let login: [UInt8] = [1, 4] + Array("user".utf8) + [6] + Array("s3cret".utf8)
        for (segment, sink) in run([(.client, [5, 2, 0, 2]), (.server, [5, 2]), (.client, login), (.server, [1, 0]),
                                    (.client, Self.socks5Request(host: "origin.test", port: 80)), (.server, Self.socks5Granted),
                                    (.client, Self.requestWithoutHost), (.server, Self.response)]) {
            #expect(sink.transactions.count == 1, "segments of \(segment)")
            let t = try? #require(sink.transactions.first)
            #expect(t?.url == "http://origin.test/x", "segments of \(segment)")
            #expect(t?.allWeirds == [.tunnelled], "segments of \(segment)")
            #expect(t?.proxyTunnel == ProxyTunnel(kind: .socks5, target: "origin.test:80"))
            #expect(t?.response?.status == 200)
            let c = sink.connections.first
            #expect(c?.seenText == "SOCKS5 tunnel to origin.test:80", "segments of \(segment)")
            #expect(c?.weirds.isEmpty == true, "segments of \(segment): \(String(describing: c?.weirds))")
            #expect(c?.seenText?.contains("s3cret") == false)
        }
    }

    @Test func socks5AddressTargets() {
        let v6: [UInt8] = [5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1, 0x1F, 0x90]
        let v4: [UInt8] = [5, 1, 0, 1, 192, 0, 2, 7, 0, 80]
        for (request, url, target) in [(v6, "http://[2001:db8::1]:8080/x", "[2001:db8::1]:8080"), (v4, "http://192.0.2.7/x", "192.0.2.7:80")] {
            for (segment, sink) in run([(.client, [5, 1, 0]), (.server, [5, 0]), (.client, request), (.server, Self.socks5Granted),
                                        (.client, Self.requestWithoutHost), (.server, Self.response)]) {
                #expect(sink.transactions.map(\.url) == [url], "segments of \(segment)")
                #expect(sink.transactions.first?.proxyTunnel?.target == target)
            }
        }
    }

    @Test func socks4AndSocks4aCarryHTTP() {
        let socks4: [UInt8] = [4, 1, 0, 80, 192, 0, 2, 7] + Array("bob".utf8) + [0]
        let socks4a: [UInt8] = [4, 1, 0x1F, 0x90, 0, 0, 0, 1] + [0] + Array("origin.test".utf8) + [0]
        let granted: [UInt8] = [0, 90, 0, 0, 0, 0, 0, 0]
        for (request, kind, target) in [(socks4, ProxyTunnel.Kind.socks4, "192.0.2.7:80"), (socks4a, .socks4a, "origin.test:8080")] {
            for (segment, sink) in run([(.client, request), (.server, granted), (.client, Self.request), (.server, Self.response)]) {
                #expect(sink.transactions.count == 1, "\(kind) segments of \(segment)")
                #expect(sink.transactions.first?.url == "http://origin.test/x", "Host names the origin")
                #expect(sink.transactions.first?.proxyTunnel == ProxyTunnel(kind: kind, target: target))
            }
        }
    }

    @Test func refusedSOCKSGivesNoTransactions() {
        let cases: [[(Transcript.Side, [UInt8])]] = [
            // Connection refused (reply 5).
            [(.client, [5, 1, 0]), (.server, [5, 0]), (.client, Self.socks5Request(host: "origin.test", port: 80)),
             (.server, [5, 5, 0, 1, 0, 0, 0, 0, 0, 0]), (.client, Self.request)],
            // No acceptable method.
            [(.client, [5, 1, 2]), (.server, [5, 0xFF])],
            // SOCKS4 rejected (91).
            [(.client, [4, 1, 0, 80, 192, 0, 2, 7, 0]), (.server, [0, 91, 0, 0, 0, 0, 0, 0])],
        ]
        for blocks in cases {
            for (segment, sink) in run(blocks) {
                #expect(sink.transactions.isEmpty, "segments of \(segment)")
                let c = sink.connections.first
                #expect(c?.weirds.map(\.0) == [.socksRefused], "segments of \(segment)")
                #expect(c?.seenText?.contains("refused") == true, "\(String(describing: c?.seenText))")
            }
        }
        let seen = run(cases[0])[0].sink.connections.first?.seenText
        #expect(seen == "not HTTP: SOCKS5 request for origin.test:80 refused: reply 5")
    }

    @Test func connectTunnelCarriesHTTPAndRetriesAfter407() {
        // A 407 first (the proxy wants credentials), then a CONNECT answered 200: only what
        // follows the 200 is tunnelled.
        let blocks: [(Transcript.Side, [UInt8])] = [
            (.client, Array("CONNECT origin.test:8080 HTTP/1.1\r\nHost: origin.test:8080\r\n\r\n".utf8)),
            (.server, Array("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n".utf8)),
            (.client, Array("CONNECT origin.test:8080 HTTP/1.1\r\nHost: origin.test:8080\r\nProxy-Authorization: Basic dTpw\r\n\r\n".utf8)),
            (.server, Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)),
            (.client, Self.requestWithoutHost), (.server, Self.response),
            (.client, Self.requestWithoutHost), (.server, Self.response),
        ]
        for (segment, sink) in run(blocks) {
            let rows = sink.transactions.map { "\($0.request?.method ?? "-") \($0.response?.status ?? 0) \($0.url) \($0.allWeirds.map(\.rawValue))" }
            #expect(rows.sorted() == [
                "CONNECT 200 https://origin.test:8080 [\"tunnel\"]",
                "CONNECT 407 https://origin.test:8080 []",
                "GET 200 http://origin.test:8080/x [\"tunnelled\"]",
                "GET 200 http://origin.test:8080/x [\"tunnelled\"]",
            ], "segments of \(segment)")
            #expect(sink.connections.first?.seenText == "CONNECT tunnel to origin.test:8080")
            #expect(sink.connections.first?.weirds.isEmpty == true)
        }
    }

    @Test func opaqueTunnelsStayOpaque() {
        // SSH through CONNECT: the CONNECT is a transaction, the tunnel's bytes are not, and the
        // connection (which did carry HTTP) is not called not_http.
        let blocks: [(Transcript.Side, [UInt8])] = [
            (.client, Array("CONNECT git.test:22 HTTP/1.1\r\n\r\n".utf8)),
            (.server, Array("HTTP/1.1 200 OK\r\n\r\n".utf8)),
            (.server, Array("SSH-2.0-OpenSSH_9.2\r\n".utf8)),
            (.client, Array("SSH-2.0-OpenSSH_9.6\r\n".utf8) + [0, 0, 1, 0x2C, 0x0A, 0x14]),
        ]
        for (segment, sink) in run(blocks) {
            #expect(sink.transactions.map { $0.request?.method } == ["CONNECT"], "segments of \(segment)")
            let c = sink.connections.first
            #expect(c?.weirds.isEmpty == true, "segments of \(segment): \(String(describing: c?.weirds))")
            #expect(c?.seenText?.hasPrefix("CONNECT tunnel to git.test:22; inside the tunnel, ") == true, "\(String(describing: c?.seenText))")
        }
    }

    @Test func nestedTunnelsAreFollowedToABoundedDepth() {
        // CONNECT inside SOCKS5 is followed; past the bound the tunnel stays opaque.
        func nested(_ depth: Int) -> [(Transcript.Side, [UInt8])] {
            var blocks: [(Transcript.Side, [UInt8])] = [(.client, [5, 1, 0]), (.server, [5, 0]),
                                                        (.client, Self.socks5Request(host: "proxy2.test", port: 3128)),
                                                        (.server, Self.socks5Granted)]
            for _ in 0..<depth {
                blocks.append((.client, Array("CONNECT origin.test:80 HTTP/1.1\r\n\r\n".utf8)))
                blocks.append((.server, Array("HTTP/1.1 200 OK\r\n\r\n".utf8)))
            }
            return blocks + [(.client, Self.requestWithoutHost), (.server, Self.response)]
        }
        let shallow = Transcript(blocks: nested(1)).collect().transactions
        #expect(shallow.map { $0.request?.method ?? "-" }.sorted() == ["CONNECT", "GET"])
        #expect(shallow.first { $0.request?.method == "GET" }?.url == "http://origin.test/x")
        let deep = Transcript(blocks: nested(StandardSessionFactory.maxTunnelDepth + 2)).collect().transactions
        #expect(!deep.contains { $0.request?.method == "GET" })
        #expect(deep.count == StandardSessionFactory.maxTunnelDepth, "the SOCKS tunnel and three CONNECT tunnels are followed; the fourth CONNECT is a transaction, its tunnel opaque")
    }

    @Test func greetingsAreRecognisedNarrowly() {
        func greeting(_ b: [UInt8]) -> Bool { b.withUnsafeBytes { SOCKSHandshake.isGreeting($0) } }
        #expect(greeting([5, 1, 0]))
        #expect(greeting([5, 2, 0, 2]))
        #expect(greeting([4, 1, 0, 80, 1, 2, 3, 4, 0]))
        #expect(!greeting([5, 1]))                       // cut short: not yet
        #expect(!greeting([5, 1, 0, 0x47]))              // trailing bytes that are no SOCKS message
        #expect(!greeting([5, 2, 0x40, 0x41]))           // methods outside the registry
        #expect(!greeting([4, 1, 0, 80, 1, 2, 3, 4]))    // no user-id terminator
        #expect(!greeting(Array("GET / HTTP/1.1\r\n".utf8)))
        #expect(!greeting([0x16, 3, 1, 0, 5]))
    }
}
