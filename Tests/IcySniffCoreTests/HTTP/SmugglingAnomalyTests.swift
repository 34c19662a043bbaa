import Testing
@testable import IcySniffCore

/// Request smuggling and framing conflicts (issue 18), as Zeek's weirds and Suricata's
/// libhtp events name them: each gets a named anomaly, and the transaction after it is still
/// found where the bytes allow. Every case also runs cut into segments of 1 to 24 bytes.
@Suite struct SmugglingAnomalyTests {
    struct Case: CustomStringConvertible, Sendable {
        var name: String
        var request: String
        var response = "HTTP/1.1 200 OK\nContent-Length: 2\n\nok\\"
        var expected: [String]
        var description: String { name }
    }

    static let next = "GET /next HTTP/1.1 body=0 -> 200 body=2/2"

    /// A request, its reply, then `GET /next` and its reply on the same connection.
    static func transcript(_ c: Case) -> String {
        ">>>\n\(c.request)\n<<<\n\(c.response)\n>>>\nGET /next HTTP/1.1\nHost: x\n\n<<<\nHTTP/1.1 200 OK\nContent-Length: 2\n\nok\\\n"
    }

    static let cases: [Case] = [
        Case(name: "Content-Length 2^64-1", request: "POST /a HTTP/1.1\nHost: x\nContent-Length: 18446744073709551615\n\nabc\\",
             expected: ["POST /a HTTP/1.1 body=0 -> 200 body=2/2 [content_length_overflow]", next + " [garbage_before_message]"]),
        Case(name: "Content-Length past 2^64", request: "POST /a HTTP/1.1\nHost: x\nContent-Length: 99999999999999999999999\n\n",
             expected: ["POST /a HTTP/1.1 body=0 -> 200 body=2/2 [content_length_overflow]", next + " []"]),
        Case(name: "Content-Length 2^63 in a response", request: "GET /a HTTP/1.1\nHost: x\n\n",
             response: "HTTP/1.1 200 OK\nContent-Length: 9223372036854775808\n\nok\\",
             // A response that cannot be framed runs until close (RFC 9112 §6.3): the next
             // exchange is inside it, and the next request is left unanswered.
             expected: ["GET /a HTTP/1.1 body=0 -> 200 body=44/44 [content_length_overflow]",
                        "GET /next HTTP/1.1 body=0 -> - [pipelined_request,request_without_response]"]),
        Case(name: "negative Content-Length", request: "POST /a HTTP/1.1\nHost: x\nContent-Length: -3\n\nabc\\",
             expected: ["POST /a HTTP/1.1 body=0 -> 200 body=2/2 [bad_content_length]", next + " [garbage_before_message]"]),
        Case(name: "leading zeros", request: "POST /a HTTP/1.1\nHost: x\nContent-Length: 0003\n\nabc\\",
             expected: ["POST /a HTTP/1.1 body=3 -> 200 body=2/2 [content_length_leading_zeros]", next + " []"]),
        Case(name: "one value twice", request: "POST /a HTTP/1.1\nHost: x\nContent-Length: 3\nContent-Length: 3\n\nabc\\",
             expected: ["POST /a HTTP/1.1 body=3 -> 200 body=2/2 [duplicate_content_length]", next + " []"]),
        Case(name: "two values", request: "POST /a HTTP/1.1\nHost: x\nContent-Length: 3, 5\n\nabc\\",
             expected: ["POST /a HTTP/1.1 body=0 -> 200 body=2/2 [conflicting_content_length,request_smuggling_suspected]",
                        next + " [garbage_before_message]"]),
        Case(name: "chunked twice", request: "POST /a HTTP/1.1\nHost: x\nTransfer-Encoding: chunked\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n",
             expected: ["POST /a HTTP/1.1 body=3 -> 200 body=2/2 [chunked_applied_twice]", next + " []"]),
        Case(name: "chunked not last", request: "POST /a HTTP/1.1\nHost: x\nTransfer-Encoding: chunked, gzip\n\n3\nabc\n0\n\n",
             expected: ["POST /a HTTP/1.1 body=0 -> 200 body=2/2 [chunked_not_final,request_smuggling_suspected]",
                        next + " [garbage_before_message]"]),
        Case(name: "unknown coding before chunked", request: "POST /a HTTP/1.1\nHost: x\nTransfer-Encoding: xgzip, chunked\n\n3\nabc\n0\n\n",
             expected: ["POST /a HTTP/1.1 body=3 -> 200 body=2/2 [unknown_transfer_encoding]", next + " []"]),
        Case(name: "chunk size with junk", request: "POST /a HTTP/1.1\nHost: x\nTransfer-Encoding: chunked\n\n3zz\nabc\n0\n\n",
             expected: ["POST /a HTTP/1.1 body=3 -> 200 body=2/2 [bad_chunk_size,request_smuggling_suspected]", next + " []"]),
        Case(name: "raw spaces in the target", request: "GET /a b/c HTTP/1.1\nHost: x\n\n",
             expected: ["GET /a b/c HTTP/1.1 body=0 -> 200 body=2/2 [space_in_request_target]", next + " []"]),
    ]

    @Test(arguments: cases)
    func named(_ c: Case) {
        expectAtEverySegmenting(Transcript(Self.transcript(c)), c.expected)
    }

    @Test func versionsThatDisagree() {
        // An HTTP/0.9 request answered with a status line.
        let old = Transcript(">>>\nGET /old\n<<<\nHTTP/1.1 200 OK\nContent-Length: 2\n\nok\\\n").run().map(summary)
        #expect(old == ["GET /old HTTP/0.9 body=0 -> 200 body=2/2 [http_0_9,http_0_9_request_answered_with_status_line]"])
        // An HTTP/1.1 request answered without one: the reply is the rest of the stream.
        let new = Transcript(">>>\nGET /new HTTP/1.1\nHost: x\n\n<<<\n<html>raw</html>\n").run()
        #expect(new.map(summary) == ["GET /new HTTP/1.1 body=0 -> 0 body=20/20 [http_0_9,status_line_missing]"])
        // Not when the server speaks another protocol (Zeek's get-to-ssh-server), nor when the
        // connection was picked up mid-stream: there the bytes may be the end of anything.
        let ssh = Transcript(">>>\nGET / HTTP/1.1\nHost: x\n\n<<<\nSSH-2.0-OpenSSH_9.2\n").run().map(summary)
        #expect(ssh == ["GET / HTTP/1.1 body=0 -> - [request_without_response]"])
        let midstream = Transcript(">>>\nGET /new HTTP/1.1\nHost: x\n\n<<<\n<html>raw</html>\n").run(handshake: false).map(summary)
        #expect(!midstream.contains { $0.contains("status_line_missing") }, "\(midstream)")
    }
}
