/// The body of one message as it arrives, whatever frames it: how it is framed, its sizes, its
/// content decoding (gzip, deflate, br, zstd) and the bytes kept of it when asked. HTTP/1.x's
/// parser feeds it the de-chunked bytes, the HTTP/2 and HTTP/3 sessions the payload of DATA
/// frames; the `HTTPMessage` extension below is the one place that decides sizes, decoding and
/// `--bodies`.
public struct MessageBody {
    // Framing (HTTP/1.x; `contentLength` from the header in every version).
    public internal(set) var chunked = false
    public internal(set) var contentLength: UInt64? = nil
    public internal(set) var closeDelimited = false

    // Sizes.
    /// Body bytes on the wire, chunk framing included.
    public internal(set) var wireBytes: UInt64 = 0
    /// Body bytes after de-chunking, before content decoding (gaps counted).
    public internal(set) var bytes: UInt64 = 0
    /// Bytes lost in capture gaps inside the body.
    public internal(set) var gapBytes: UInt64 = 0
    /// Body size after content decoding; equals `bytes` when there is no Content-Encoding or
    /// decoding failed.
    public internal(set) var decodedBytes: UInt64 = 0

    // Content decoding.
    public internal(set) var encodings: [String] = []
    var decoder: ContentDecoder? = nil
    public internal(set) var decodeFailed = false
    public internal(set) var decodeCapped = false
    /// `wasDecoded` of the message a `TransactionArchive` was made of (it keeps no decoder).
    var archivedWasDecoded: Bool? = nil
    /// The body ended (`complete`, as framed) with its compressed bytes still held for the
    /// decoder's whole-body pass, which `settleDecoding()` runs on the export thread.
    var toSettle: Bool? = nil

    // Kept bytes (`--bodies`).
    /// The body as decoded (or raw, when decoding failed), kept only when asked and up to the cap.
    public internal(set) var kept: [UInt8]? = nil
    public internal(set) var truncated = false
    /// What `kept` holds of the pipeline's `BodyBudget` until the message is emitted.
    var budget: BodyBudget? = nil
    var charged = 0

    /// Whether the body was decoded (a Content-Encoding we understand, decoded without error).
    public var wasDecoded: Bool { archivedWasDecoded ?? (decoder != nil && !decodeFailed) }

    /// What `kept` was charged goes back to the budget (the message is emitted or dropped).
    mutating func releaseBudget() {
        if charged > 0 { budget?.give(charged) }
        charged = 0
        budget = nil
    }
}

extension HTTPMessage {
    /// Chooses the content decoder from Content-Encoding (at the end of the head).
    func setUpBodyDecoder(options: HTTPParserOptions) {
        guard let first = headers.index(of: .contentEncoding) else { return }
        let tokens: [String]
        // The usual case, one `Content-Encoding: gzip` line, without splitting Strings.
        if headers.count(of: .contentEncoding) == 1,
           headers.withValueBytes(at: first, { equalsBytes($0, "gzip") }) {
            tokens = ["gzip"]
        } else {
            guard let encoding = headers.combined(.contentEncoding) else { return }
            tokens = encoding.split(separator: ",").map { $0.trimmingASCIIWhitespace() }
        }
        body.encodings = tokens
        do {
            body.decoder = try ContentDecoder(encodings: tokens, maxOutput: options.maxDecodedBytes,
                                         keepsOutput: options.keepBodies)
        } catch {
            note(.unsupportedContentEncoding)
        }
    }

    /// Body bytes as sent (after any transfer framing); `wire` counts the framing too.
    @inline(__always)
    func receiveBody(_ data: UnsafeRawBufferPointer, wire: Int, options: HTTPParserOptions) {
        guard data.count > 0 else { return }
        body.bytes &+= UInt64(data.count)
        body.wireBytes &+= UInt64(wire)
        if let decoder = body.decoder, !body.decodeFailed {
            // The closure takes the three values it needs, not the options (a copy of them all).
            let keep = options.keepBodies
            let cap = options.maxBodyBytes
            let budget = options.bodyBudget
            let ok = decoder.feed(data) { out in
                if keep { self.keepBody(out, cap: cap, budget: budget) }
            }
            decoderStatus(decoder, ok: ok)
        } else {
            body.decodedBytes &+= UInt64(data.count)
            if options.keepBodies && body.decoder == nil { keepBody(data, cap: options.maxBodyBytes, budget: options.bodyBudget) }
        }
    }

    /// Body bytes lost in a capture gap: counted, flagged; decoding cannot go on past them.
    func receiveBodyGap(_ length: UInt64) {
        guard length > 0 else { return }
        body.bytes &+= length
        body.wireBytes &+= length
        body.gapBytes &+= length
        note(.bodyGap)
        if body.decoder != nil && !body.decodeFailed { body.decodeFailed = true }
    }

    /// The body is over (`complete`: as framed): the decoder's last output and the final sizes.
    ///
    /// With `settleDecodingOnExport` (a run with an export thread), a body whose compressed bytes
    /// the decoder holds for its whole-body pass, and whose output is not kept, is left for
    /// `settleDecoding()`: the inflate (only its size is wanted) runs on the export thread,
    /// off the pipeline's, which is the slower of the two. Nothing on the pipeline's thread reads
    /// the decoded size or the decoding's flags; the export thread settles every message before
    /// any sink sees it.
    func endBody(complete: Bool, options: HTTPParserOptions) {
        if options.settleDecodingOnExport, !options.keepBodies, let decoder = body.decoder, !body.decodeFailed, decoder.heldCount > 0 {
            body.toSettle = complete
            return
        }
        finishDecoding(complete: complete, options: options)
    }

    /// The rest of `endBody` for a body whose decoding was left to the export thread (its
    /// output was not to be kept: the default options say so); answers whether there was any.
    @discardableResult
    func settleDecoding() -> Bool {
        guard let complete = body.toSettle else { return false }
        body.toSettle = nil
        finishDecoding(complete: complete, options: HTTPParserOptions())
        return true
    }

    /// Compressed bytes held until `settleDecoding()`.
    var bytesToSettle: Int { body.toSettle == nil ? 0 : body.decoder?.heldCount ?? 0 }

    private func finishDecoding(complete: Bool, options: HTTPParserOptions) {
        if let decoder = body.decoder, !body.decodeFailed {
            let keep = options.keepBodies
            let cap = options.maxBodyBytes
            let budget = options.bodyBudget
            let ok = decoder.finish { out in
                if keep { self.keepBody(out, cap: cap, budget: budget) }
            }
            decoderStatus(decoder, ok: ok)
        }
        if complete, body.bytes > 0, !body.decodeFailed, !body.decodeCapped, let decoder = body.decoder, !decoder.finishedCleanly {
            // The framing says the body is whole, but its compressed stream did not end (a
            // sender that cut it short): the decoded size counts only what was decoded.
            note(.bodyDecodeIncomplete)
        }
        if body.decodeFailed || body.decoder == nil {
            body.decodedBytes = body.bytes
        }
    }

    @inline(__always)
    private func decoderStatus(_ decoder: ContentDecoder, ok: Bool) {
        body.decodedBytes = decoder.decodedCount
        if decoder.capped && !body.decodeCapped { body.decodeCapped = true; note(.bodyDecodeCapped) }
        if !ok { body.decodeFailed = true; note(.bodyDecodeFailed) }
    }

    /// Keeps what the per-body cap and the pipeline's budget let in; a body that passes
    /// either is cut there, flagged once with the limit that cut it.
    private func keepBody(_ data: UnsafeRawBufferPointer, cap: Int, budget: BodyBudget?) {
        if body.truncated { return }
        if body.kept == nil { body.kept = [] }
        let count = body.kept!.count
        var take = max(0, min(data.count, cap - count))
        var cut: Weird? = take < data.count ? .bodyTruncatedInMemory : nil
        if let budget {
            let free = max(0, budget.limit - budget.used)
            if take > free { take = free; cut = .bodiesBudgetExceeded }
            budget.charge(take)
            body.budget = budget
            body.charged += take
        }
        if take > 0 {
            // Grown by doubling as an array grows while small, never past the cap (an array's
            // own doubling takes a body of exactly 16 MiB to 32 MiB of storage: its header does
            // not fit in 2^24). Past 1 MiB it is given the cap at once: the allocator maps that
            // much, but pages are resident only as they are written, and no half-size copy
            // stays behind (doubling 8 -> 16 MiB left the freed 8 MiB resident: a 16 MiB body
            // cost 36 MiB of RSS). Taken out of the optional, so that it grows in place.
            var kept = body.kept.take() ?? []
            if count + take > kept.capacity {
                kept.reserveCapacity(count + take > 1 << 20 ? cap : min(cap, max(count + take, kept.capacity * 2)))
            }
            kept.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[0..<take]))
            body.kept = kept
        }
        if let cut {
            body.truncated = true
            note(cut)
        }
    }

}
