import Testing
@testable import IcySniffCore

/// HTTP/0.9 confusion (issue 32, from public captures of other projects): a reply without a
/// status line to a request that had a version (shown in HTTP/0.9's form and named
/// `status_line_missing`: the server broke the version it was asked in), and a request whose
/// Content-Length body must not be read as the reply. Both held already when these were written
/// (issue 14's HTTP/0.9 rules); they stay as the cases, at every segmenting.
@Suite struct HTTP09ConfusionTests {
    @Test func aReplyWithoutStatusLineToAVersionedRequest() {
        expectAtEverySegmenting(Transcript("""
        >>>
        GET /old HTTP/1.0
        Host: legacy.test

        <<<
        <html>no status line here</html>\\
        """), ["GET /old HTTP/1.0 body=0 -> 0 body=32/32 [http_0_9,status_line_missing]"])
    }

    @Test func aRequestBodyIsNotTheReply() {
        expectAtEverySegmenting(Transcript("""
        >>>
        POST /form HTTP/1.0
        Host: legacy.test
        Content-Length: 5

        hello\\
        <<<
        <html>ok</html>\\
        """), ["POST /form HTTP/1.0 body=5 -> 0 body=15/15 [http_0_9,status_line_missing]"])
    }
}
