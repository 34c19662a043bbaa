/// The body of one message as it arrives, whatever frames it: counted, content-decoded (gzip,
/// deflate, br, zstd) and kept when asked. HTTP/1.x's parser feeds it the de-chunked bytes, the
/// HTTP/2 session the payload of DATA frames; one place decides sizes, decoding and `--bodies`.
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
        contentEncodings = tokens
        do {
            decoder = try ContentDecoder(encodings: tokens, maxOutput: options.maxDecodedBytes,
                                         keepsOutput: options.keepBodies)
        } catch {
            note(.unsupportedContentEncoding)
        }
    }

    /// Body bytes as sent (after any transfer framing); `wire` counts the framing too.
    @inline(__always)
    func receiveBody(_ data: UnsafeRawBufferPointer, wire: Int, options: HTTPParserOptions) {
        guard data.count > 0 else { return }
        bodyBytes &+= UInt64(data.count)
        bodyWireBytes &+= UInt64(wire)
        if let decoder, !decodeFailed {
            let keep = options.keepBodies
            let cap = options.maxBodyBytes
            let ok = decoder.feed(data) { out in
                if keep { self.keepBody(out, cap: cap, budget: options.bodyBudget) }
            }
            decoderStatus(decoder, ok: ok)
        } else {
            decodedBytes &+= UInt64(data.count)
            if options.keepBodies && decoder == nil { keepBody(data, cap: options.maxBodyBytes, budget: options.bodyBudget) }
        }
    }

    /// Body bytes lost in a capture gap: counted, flagged; decoding cannot go on past them.
    func receiveBodyGap(_ length: UInt64) {
        guard length > 0 else { return }
        bodyBytes &+= length
        bodyWireBytes &+= length
        bodyGapBytes &+= length
        note(.bodyGap)
        if decoder != nil && !decodeFailed { decodeFailed = true }
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
        if options.settleDecodingOnExport, !options.keepBodies, let decoder, !decodeFailed, decoder.heldCount > 0 {
            decodingToSettle = complete
            return
        }
        finishDecoding(complete: complete, options: options)
    }

    /// The rest of `endBody` for a body whose decoding was left to the export thread (its
    /// output was not to be kept: the default options say so); answers whether there was any.
    @discardableResult
    func settleDecoding() -> Bool {
        guard let complete = decodingToSettle else { return false }
        decodingToSettle = nil
        finishDecoding(complete: complete, options: HTTPParserOptions())
        return true
    }

    /// Compressed bytes held until `settleDecoding()`.
    var bytesToSettle: Int { decodingToSettle == nil ? 0 : decoder?.heldCount ?? 0 }

    private func finishDecoding(complete: Bool, options: HTTPParserOptions) {
        if let decoder, !decodeFailed {
            let keep = options.keepBodies
            let cap = options.maxBodyBytes
            let ok = decoder.finish { out in
                if keep { self.keepBody(out, cap: cap, budget: options.bodyBudget) }
            }
            decoderStatus(decoder, ok: ok)
        }
        if complete, bodyBytes > 0, !decodeFailed, !decodeCapped, let decoder, !decoder.finishedCleanly {
            // The framing says the body is whole, but its compressed stream did not end (a
            // sender that cut it short): the decoded size counts only what was decoded.
            note(.bodyDecodeIncomplete)
        }
        if decodeFailed || decoder == nil {
            decodedBytes = bodyBytes
        }
    }

    @inline(__always)
    private func decoderStatus(_ decoder: ContentDecoder, ok: Bool) {
        decodedBytes = decoder.decodedCount
        if decoder.capped && !decodeCapped { decodeCapped = true; note(.bodyDecodeCapped) }
        if !ok { decodeFailed = true; note(.bodyDecodeFailed) }
    }

    /// Keeps what the per-body cap and the pipeline's budget let in; a body that passes
    /// either is cut there, flagged once with the limit that cut it.
    private func keepBody(_ data: UnsafeRawBufferPointer, cap: Int, budget: BodyBudget?) {
        if bodyTruncated { return }
        if body == nil { body = [] }
        let count = body!.count
        var take = max(0, min(data.count, cap - count))
        var cut: Weird? = take < data.count ? .bodyTruncatedInMemory : nil
        if let budget {
            let free = max(0, budget.limit - budget.used)
            if take > free { take = free; cut = .bodiesBudgetExceeded }
            budget.charge(take)
            bodyBudget = budget
            bodyCharged += take
        }
        if take > 0 {
            // Grown by doubling as an array grows while small, never past the cap (an array's
            // own doubling takes a body of exactly 16 MiB to 32 MiB of storage: its header does
            // not fit in 2^24). Past 1 MiB it is given the cap at once: the allocator maps that
            // much, but pages are resident only as they are written, and no half-size copy
            // stays behind (doubling 8 -> 16 MiB left the freed 8 MiB resident: a 16 MiB body
            // cost 36 MiB of RSS). Taken out of the optional, so that it grows in place.
            var kept = body.take() ?? []
            if count + take > kept.capacity {
                kept.reserveCapacity(count + take > 1 << 20 ? cap : min(cap, max(count + take, kept.capacity * 2)))
            }
            kept.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[0..<take]))
            body = kept
        }
        if let cut {
            bodyTruncated = true
            note(cut)
        }
    }

}
