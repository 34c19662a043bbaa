extension String {
    /// Every occurrence of `target` replaced (no Foundation needed).
    public func replacingAll(_ target: String, _ replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = self[...]
        while let r = rest.range(of: target) {
            result += rest[..<r.lowerBound]
            result += replacement
            rest = rest[r.upperBound...]
        }
        return result + rest
    }
}

extension Substring {
    func range(of needle: String) -> Range<Substring.Index>? {
        guard let first = needle.first else { return nil }
        var i = startIndex
        while i < endIndex {
            if self[i] == first, self[i...].hasPrefix(needle) {
                return i..<index(i, offsetBy: needle.count)
            }
            i = index(after: i)
        }
        return nil
    }
}
