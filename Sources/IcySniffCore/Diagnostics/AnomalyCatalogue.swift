/// The catalogue of anomaly names as Markdown (docs/ANOMALIES.md is this text; a test keeps them equal).
public enum AnomalyCatalogue {
    /// Zeek weird names that mean the same thing, where one exists.
    static let zeekEquivalent: [Weird: String] = [
        .truncatedIPHeader: "truncated_IP", .truncatedTCPHeader: "truncated_header", .badTCPHeaderLength: "bad_TCP_header_len",
        .fragmentOverlap: "fragment_overlap", .fragmentTooLarge: "excessively_large_fragment",
        .contentGap: "content_gap", .retransmissionInconsistency: "TCP_ack_underflow_or_misorder / rexmit_inconsistency",
        .badContentLength: "HTTP_bad_content_length", .contentLengthAndChunked: "HTTP_content_length_and_chunked",
        .badChunkSize: "HTTP_bad_chunk_size", .chunkSizeOverflow: "HTTP_chunk_size_overflow",
        .unexpectedServerData: "unexpected_server_HTTP_data", .unexpectedClientData: "unmatched_HTTP_reply / bad_HTTP_request",
        .badRequestLine: "bad_HTTP_request", .badStatusLine: "bad_HTTP_reply", .requestMissing: "unmatched_HTTP_reply",
        .http09: "HTTP_version_0.9", .obsoleteLineFolding: "HTTP_header_continuation",
        .midstreamPickup: "(conn.log history without S)", .connectionReset: "(conn.log history R)",
        .encapsulationTooDeep: "exceeded_tunnel_max_depth", .truncatedTunnelHeader: "truncated_GRE / gtp_truncated",
        .unknownTunnelPayload: "unknown_gre_version / unknown_gre_protocol",
    ]

    public static var markdown: String {
        var out = """
        # Anomalies

        icy-sniff never drops what it sees: when traffic is odd it names the oddity and carries on, like
        Zeek's weird.log. Names are stable `snake_case` strings. They appear in the HAR (`_flags` and
        `comment` of an entry, `anomalies` of `log._connections`), in the `flags` column of the tables and
        NDJSON, and counted in the summary on standard error. `icy-sniff --list-anomalies` prints this page.

        | name | meaning | Zeek weird |
        | --- | --- | --- |

        """
        for w in Weird.allCases {
            out += "| `\(w.rawValue)` | \(w.explanation) | \(zeekEquivalent[w].map { "`\($0)`" } ?? "") |\n"
        }
        return out
    }
}
