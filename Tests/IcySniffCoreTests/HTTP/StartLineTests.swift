import Testing
@testable import IcySniffCore

/// Request lines (RFC 9112 §3) as the parser splits them: method, target, version, and the
/// deviations it flags, in each of the forms a line can take.
@Suite struct StartLineTests {
    struct Expected {
        var method: String, target: String, version: String
        var malformed = false, spaceInTarget = false
    }

    @Test func requestLinesSplitAsTheRFCSays() {
        let cases: [(String, Expected?)] = [
            ("GET /a/b?c=d HTTP/1.1", Expected(method: "GET", target: "/a/b?c=d", version: "HTTP/1.1")),
            ("PROPFIND / http/1.0", Expected(method: "PROPFIND", target: "/", version: "http/1.0")),
            ("GET  \t/x\t  HTTP/1.1 \t", Expected(method: "GET", target: "/x", version: "HTTP/1.1")),
            ("GET /a b HTTP/1.1", Expected(method: "GET", target: "/a b", version: "HTTP/1.1", spaceInTarget: true)),
            ("GET /x HTTP/2", Expected(method: "GET", target: "/x", version: "HTTP/2", malformed: true)),
            ("GET /a b c", Expected(method: "GET", target: "/a b c", version: "", malformed: true)),
            ("OPTIONS HTTP/1.1", Expected(method: "OPTIONS", target: "", version: "HTTP/1.1", malformed: true)),
            ("GET /index.html", Expected(method: "GET", target: "/index.html", version: "")),
            ("POST /form", Expected(method: "POST", target: "/form", version: "", malformed: true)),
            ("GET \t ", Expected(method: "GET", target: "", version: "", malformed: true)),
            ("GET", nil),
            (" GET / HTTP/1.1", nil),
            ("G(T / HTTP/1.1", nil),
            ("", nil),
        ]
        for (line, expected) in cases {
            let parsed = RequestLine(Array(line.utf8)[...])
            guard let expected else { #expect(parsed == nil, "\(line)"); continue }
            #expect(parsed?.method == expected.method, "\(line)")
            #expect(parsed.map { String(decoding: $0.target, as: UTF8.self) } == expected.target, "\(line)")
            #expect(parsed?.version == expected.version, "\(line)")
            #expect(parsed?.malformed == expected.malformed, "\(line)")
            #expect(parsed?.spaceInTarget == expected.spaceInTarget, "\(line)")
        }
        // A slice that does not start at index 0 reads the same.
        let bytes = Array("xxGET /y HTTP/1.0".utf8)
        #expect(RequestLine(bytes[2...])?.target == Array("/y".utf8))
    }
}
