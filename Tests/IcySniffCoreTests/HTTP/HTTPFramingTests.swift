import Testing
@testable import IcySniffCore

/// Framing rules of RFC 9112, each as a transcript. Every case runs with each block in one
/// segment and cut into segments of every size from 1 to 24 bytes (llhttp's "scan" mode); all
/// runs must give the same transactions.
@Suite struct HTTPFramingTests {
    struct Case: CustomStringConvertible, Sendable {
        var name: String
        var transcript: String
        var expected: [String]
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "RFC 9112 §6.2 Content-Length body, keep-alive", transcript: """
        >>>
        GET /a HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 200 OK
        Content-Length: 5

        hello\\
        >>>
        GET /b HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 404 Not Found
        Content-Length: 0


        """, expected: [
            "GET /a HTTP/1.1 body=0 -> 200 body=5/5 []",
            "GET /b HTTP/1.1 body=0 -> 404 body=0/0 []",
        ]),
        Case(name: "RFC 9112 §7.1 chunked with extensions and trailers", transcript: """
        >>>
        GET / HTTP/1.1
        Host: x

        <<<
        HTTP/1.1 200 OK
        Transfer-Encoding: chunked

        5;ext=1
        hello
        7
        , world
        0
        Trailer-Field: yes


        """, expected: ["GET / HTTP/1.1 body=0 -> 200 body=12/12 []"]),
        Case(name: "RFC 9112 §6.3 item 1: HEAD, 204 and 304 have no body", transcript: """
        >>>
        HEAD /h HTTP/1.1
        Host: x

        GET /n HTTP/1.1
        Host: x

        GET /m HTTP/1.1
        Host: x
        If-None-Match: "a"

        <<<
        HTTP/1.1 200 OK
        Content-Length: 1234

        HTTP/1.1 204 No Content
        Content-Length: 10

        HTTP/1.1 304 Not Modified
        ETag: "a"


        """, expected: [
            "HEAD /h HTTP/1.1 body=0 -> 200 body=0/0 []",
            "GET /n HTTP/1.1 body=0 -> 204 body=0/0 [pipelined_request]",
            "GET /m HTTP/1.1 body=0 -> 304 body=0/0 [pipelined_request]",
        ]),
        Case(name: "RFC 9110 §15.2.1 100 Continue before the final response", transcript: """
        >>>
        POST /upload HTTP/1.1
        Host: x
        Content-Length: 4
        Expect: 100-continue

        <<<
        HTTP/1.1 100 Continue

        >>>
        data\\
        <<<
        HTTP/1.1 201 Created
        Content-Length: 2

        ok\\
        """, expected: ["POST /upload HTTP/1.1 body=4 -> 201 body=2/2 []"]),
        Case(name: "RFC 9112 §6.3 item 8: close-delimited response", transcript: """
        >>>
        GET /old HTTP/1.0

        <<<
        HTTP/1.0 200 OK
        Content-Type: text/plain

        until the connection closes\\
        """, expected: ["GET /old HTTP/1.0 body=0 -> 200 body=27/27 []"]),
        Case(name: "RFC 9112 §6.3 item 3: Transfer-Encoding and Content-Length", transcript: """
        >>>
        POST / HTTP/1.1
        Host: target
        Transfer-Encoding: chunked
        Content-Length: 50

        0

        GET /smuggled HTTP/1.1
        Host: target


        """, expected: [
            "POST / HTTP/1.1 body=0 -> - [content_length_and_chunked,request_smuggling_suspected,request_without_response]",
            "GET /smuggled HTTP/1.1 body=0 -> - [pipelined_request,request_without_response]",
        ]),
        Case(name: "RFC 9112 §6.3 item 5: invalid Content-Length in a request", transcript: """
        >>>
        POST / HTTP/1.1
        Host: target
        Content-Length: -1

        GET /next HTTP/1.1
        Host: target


        """, expected: [
            "POST / HTTP/1.1 body=0 -> - [bad_content_length,request_without_response]",
            "GET /next HTTP/1.1 body=0 -> - [pipelined_request,request_without_response]",
        ]),
        Case(name: "RFC 9112 §7.1 chunk size that overflows 64 bits", transcript: """
        >>>
        POST / HTTP/1.1
        Host: target
        Transfer-Encoding: chunked

        10000000000000000

        GET /after HTTP/1.1
        Host: target


        """, expected: [
            "POST / HTTP/1.1 body=0 -> - [chunk_size_overflow,request_incomplete,request_smuggling_suspected,request_without_response]",
            "GET /after HTTP/1.1 body=0 -> - [pipelined_request,request_without_response]",
        ]),
        Case(name: "RFC 9112 §6.1 Transfer-Encoding names are case-insensitive; chunked must be last", transcript: """
        >>>
        POST /a HTTP/1.1
        Host: target
        Transfer-Encoding:  CHUNKED\t

        3
        abc
        0

        POST /b HTTP/1.1
        Host: target
        Transfer-Encoding: chunked
        Transfer-Encoding: gzip

        GET /c HTTP/1.1
        Host: target


        """, expected: [
            "POST /a HTTP/1.1 body=3 -> - [request_without_response]",
            "POST /b HTTP/1.1 body=0 -> - [chunked_not_final,pipelined_request,request_smuggling_suspected,request_without_response]",
            "GET /c HTTP/1.1 body=0 -> - [pipelined_request,request_without_response]",
        ]),
        Case(name: "RFC 9112 §5.2 obs-fold continues a field value", transcript: """
        >>>
        POST / HTTP/1.1
        Host: target
        Transfer-Encoding:
         chunked

        0

        <<<
        HTTP/1.1 200 OK
        Content-Length: 0


        """, expected: ["POST / HTTP/1.1 body=0 -> 200 body=0/0 [obs_fold_in_header]"]),
        Case(name: "RFC 9112 §2.2 bare LF line endings are accepted", transcript: """
        >>>
        GET /lf HTTP/1.1\\n
        Host: x\\n
        \\n
        <<<
        HTTP/1.1 200 OK\\n
        Content-Length: 2\\n
        \\n
        ok\\
        """, expected: ["GET /lf HTTP/1.1 body=0 -> 200 body=2/2 [bare_lf_line_ending]"]),
        Case(name: "RFC 9112 §9.3.2 pipelining: three requests before the responses", transcript: """
        >>>
        GET /1 HTTP/1.1
        Host: x

        GET /2 HTTP/1.1
        Host: x

        GET /3 HTTP/1.1
        Host: x

        <<<
        HTTP/1.1 200 OK
        Content-Length: 1

        1HTTP/1.1 200 OK
        Content-Length: 2

        22HTTP/1.1 200 OK
        Content-Length: 3

        333\\
        """, expected: [
            "GET /1 HTTP/1.1 body=0 -> 200 body=1/1 []",
            "GET /2 HTTP/1.1 body=0 -> 200 body=2/2 [pipelined_request]",
            "GET /3 HTTP/1.1 body=0 -> 200 body=3/3 [pipelined_request]",
        ]),
        Case(name: "RFC 9112 §9.3 a response with no request, then a request with no response", transcript: """
        <<<
        HTTP/1.1 200 OK
        Content-Length: 0

        >>>
        GET /late HTTP/1.1
        Host: x


        """, expected: [
            "- -> 200 body=0/0 [response_without_request]",
            "GET /late HTTP/1.1 body=0 -> - [request_without_response]",
        ]),
        Case(name: "RFC 9110 §9.3.6 CONNECT 200 turns the connection into a tunnel", transcript: """
        >>>
        CONNECT example.com:443 HTTP/1.1
        Host: example.com:443

        <<<
        HTTP/1.1 200 Connection Established

        >>>
        \u{16}\u{03}\u{01} binary tls bytes\\
        <<<
        \u{16}\u{03}\u{03} more\\
        """, expected: ["CONNECT example.com:443 HTTP/1.1 body=0 -> 200 body=0/0 [tunnel]"]),
        Case(name: "RFC 9110 §15.2.2 101 Switching Protocols", transcript: """
        >>>
        GET /ws HTTP/1.1
        Host: x
        Upgrade: websocket
        Connection: Upgrade

        <<<
        HTTP/1.1 101 Switching Protocols
        Upgrade: websocket
        Connection: Upgrade

        \u{01}\u{05}hello\\
        """, expected: ["GET /ws HTTP/1.1 body=0 -> 101 body=0/0 [tunnel]"]),
        Case(name: "RFC 9112 Appendix C.1: HTTP/0.9 simple request and response", transcript: """
        >>>
        GET /index.html
        <<<
        <html>old</html>\\
        """, expected: ["GET /index.html HTTP/0.9 body=0 -> 0 body=16/16 [http_0_9]"]),
        Case(name: "garbage before a request is skipped and counted", transcript: """
        >>>
        \u{01}\u{02}garbage line
        GET /after-garbage HTTP/1.1
        Host: x

        <<<
        HTTP/1.1 200 OK
        Content-Length: 0


        """, expected: ["GET /after-garbage HTTP/1.1 body=0 -> 200 body=0/0 []"]),
        Case(name: "RFC 9112 §6.3: a body cut by the end of the connection is flagged", transcript: """
        >>>
        GET /big HTTP/1.1
        Host: x

        <<<
        HTTP/1.1 200 OK
        Content-Length: 100

        only part\\
        """, expected: ["GET /big HTTP/1.1 body=0 -> 200 body=9/9 [interrupted_by_connection_close,response_incomplete]"]),
    ]

    @Test(arguments: cases)
    func framing(_ c: Case) {
        expectAtEverySegmenting(Transcript(c.transcript), c.expected)
    }

    @Test func headersKeepOrderCaseAndRepeats() {
        let t = Transcript("""
        >>>
        GET / HTTP/1.1
        Host: x
        X-Dup: one
        x-dup: two

        <<<
        HTTP/1.1 200 OK
        Set-Cookie: a=1
        Set-Cookie: b=2
        Content-Length: 0


        """).run()
        #expect(t.count == 1)
        #expect(t[0].request?.headers.all("X-DUP") == ["one", "two"])
        #expect(t[0].request?.headers.map(\.name) == ["Host", "X-Dup", "x-dup"])
        #expect(t[0].response?.headers.all("set-cookie") == ["a=1", "b=2"])
    }

    @Test func timingsComeFromSegmentTimes() {
        // Handshake at t+1..3 ms, then one segment per block, 1 ms apart.
        let t = Transcript("""
        >>>
        GET / HTTP/1.1
        Host: x

        <<<
        HTTP/1.1 200 OK
        Content-Length: 0


        """).run()
        let timings = t[0].timings
        #expect(timings.connect == 2.0)      // SYN at 1 ms, handshake ACK at 3 ms
        #expect(timings.send == 0)
        #expect(timings.wait == 1.0)
        #expect(timings.receive == 0)
        #expect(timings.total == 3.0)
    }

    /// The protocol is what the response said: an HTTP/1.0 server answering an HTTP/1.1
    /// request spoke HTTP/1.0 (DevTools' protocol column says so); with no response, the request's.
    @Test func protocolIsTheVersionTheResponseSaid() {
        let t = Transcript("""
        >>>
        GET / HTTP/1.1
        Host: x

        <<<
        HTTP/1.0 200 OK
        Content-Length: 0

        >>>
        GET /b HTTP/1.1
        Host: x


        """).run()
        #expect(t.map(\.protocolName) == ["http/1.0", "http/1.1"])
    }
}
