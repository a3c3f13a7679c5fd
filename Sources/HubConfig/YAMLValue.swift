public import Yams

/// A YAML value as the document editor sees it: untyped scalars, sequences and ordered mappings.
///
/// Scalars keep their textual value only (`true`, `1.0` and `"true"` are all `.scalar`), so two
/// values compare equal when they read the same, whatever quoting style the file used.
/// Mappings keep the order of their keys, and equality is order-sensitive.
public indirect enum YAMLValue: Sendable, Equatable {
    /// A scalar, as its (unquoted, unescaped) text. An empty or implicit null value is `""`.
    case scalar(String)
    /// A sequence of values.
    case sequence([YAMLValue])
    /// A mapping with string keys, in document order.
    case mapping([(key: String, value: YAMLValue)])

    /// Two values are equal when they have the same shape, the same scalars and, for mappings,
    /// the same keys in the same order with equal values.
    public static func == (lhs: YAMLValue, rhs: YAMLValue) -> Bool {
        switch (lhs, rhs) {
        case let (.scalar(a), .scalar(b)):
            return a == b
        case let (.sequence(a), .sequence(b)):
            return a == b
        case let (.mapping(a), .mapping(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default:
            return false
        }
    }
}

/// One step of a path into a YAML document: a mapping key or a (zero-based) sequence index.
public enum YAMLPathComponent: Sendable, Hashable {
    case key(String)
    case index(Int)
}

extension YAMLValue {
    /// Converts a node composed by Yams.
    ///
    /// Scalars become `.scalar` with their string value (an implicit null such as `key:` becomes
    /// `.scalar("")`); mapping keys that are not scalars are converted to their flow rendering.
    /// Aliases are resolved by `Yams.compose` and so appear as copies of their anchored node.
    public init(node: Yams.Node) {
        switch node {
        case let .scalar(scalar):
            self = .scalar(scalar.string)
        case let .alias(alias):
            self = .scalar("*" + alias.anchor.rawValue)
        case let .sequence(sequence):
            self = .sequence(sequence.map(YAMLValue.init(node:)))
        case let .mapping(mapping):
            self = .mapping(
                mapping.map { pair in
                    (key: YAMLValue.keyString(pair.key), value: YAMLValue(node: pair.value))
                })
        }
    }

    /// The string used as a mapping key for `node`.
    static func keyString(_ node: Yams.Node) -> String {
        if case let .scalar(scalar) = node { return scalar.string }
        return YAMLRenderer().flow(YAMLValue(node: node))
    }

    /// The scalar text, if this is a scalar.
    var scalarString: String? {
        if case let .scalar(string) = self { return string }
        return nil
    }

    /// Whether this is a scalar that YAML reads as null (`""`, `~`, `null`).
    var isNullScalar: Bool {
        guard case let .scalar(string) = self else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(string)
    }

    /// Whether this is an empty sequence or an empty mapping.
    var isEmptyCollection: Bool {
        switch self {
        case let .sequence(items): return items.isEmpty
        case let .mapping(pairs): return pairs.isEmpty
        case .scalar: return false
        }
    }

    /// The value at `path`, or `nil` if some component does not exist.
    public func value(at path: some Collection<YAMLPathComponent>) -> YAMLValue? {
        guard let first = path.first else { return self }
        switch (first, self) {
        case let (.key(key), .mapping(pairs)):
            return pairs.first { $0.key == key }?.value.value(at: path.dropFirst())
        case let (.index(index), .sequence(items)) where items.indices.contains(index):
            return items[index].value(at: path.dropFirst())
        default:
            return nil
        }
    }

    /// Compares like `==`, except that the order of mapping keys does not matter.
    func isEquivalent(to other: YAMLValue) -> Bool {
        switch (self, other) {
        case let (.scalar(a), .scalar(b)):
            return a == b
        case let (.sequence(a), .sequence(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isEquivalent(to: $1) }
        case let (.mapping(a), .mapping(b)):
            guard a.count == b.count else { return false }
            return a.allSatisfy { pair in
                b.first { $0.key == pair.key }.map { $0.value.isEquivalent(to: pair.value) } ?? false
            }
        default:
            return false
        }
    }

    /// This value with `path` set to `newValue`, creating missing mapping keys (a missing key is
    /// appended; a null scalar on the way becomes a mapping). Index `count` appends to a sequence.
    func setting(_ newValue: YAMLValue, at path: some Collection<YAMLPathComponent>) throws -> YAMLValue {
        guard let first = path.first else { return newValue }
        let rest = path.dropFirst()
        switch (first, self) {
        case let (.key(key), .mapping(pairs)):
            var pairs = pairs
            if let index = pairs.firstIndex(where: { $0.key == key }) {
                pairs[index].value = try pairs[index].value.setting(newValue, at: rest)
            } else {
                pairs.append((key: key, value: try YAMLValue.mapping([]).setting(newValue, at: rest)))
            }
            return .mapping(pairs)
        case (.key, _) where isNullScalar:
            return try YAMLValue.mapping([]).setting(newValue, at: path)
        case let (.index(index), .sequence(items)) where items.indices.contains(index):
            var items = items
            items[index] = try items[index].setting(newValue, at: rest)
            return .sequence(items)
        case let (.index(index), .sequence(items)) where index == items.count:
            return .sequence(items + [try YAMLValue.mapping([]).setting(newValue, at: rest)])
        default:
            throw YAMLEditError("cannot set \(YAMLValue.describe(path)): it does not match the document structure")
        }
    }

    /// This value without the mapping key or sequence item at `path` (which must exist).
    func removing(at path: some Collection<YAMLPathComponent>) throws -> YAMLValue {
        guard let first = path.first else { throw YAMLEditError("cannot remove the document root") }
        let rest = path.dropFirst()
        switch (first, self) {
        case let (.key(key), .mapping(pairs)):
            guard let index = pairs.firstIndex(where: { $0.key == key }) else { break }
            var pairs = pairs
            if rest.isEmpty {
                pairs.remove(at: index)
            } else {
                pairs[index].value = try pairs[index].value.removing(at: rest)
            }
            return .mapping(pairs)
        case let (.index(index), .sequence(items)) where items.indices.contains(index):
            var items = items
            if rest.isEmpty { items.remove(at: index) } else { items[index] = try items[index].removing(at: rest) }
            return .sequence(items)
        default:
            break
        }
        throw YAMLEditError("nothing to remove at \(YAMLValue.describe(path))")
    }

    /// The first mapping key that appears twice in the same mapping, anywhere in this value.
    var firstDuplicateKey: String? {
        switch self {
        case .scalar:
            return nil
        case let .sequence(items):
            return items.lazy.compactMap(\.firstDuplicateKey).first
        case let .mapping(pairs):
            var seen: Set<String> = []
            for pair in pairs where !seen.insert(pair.key).inserted { return pair.key }
            return pairs.lazy.compactMap(\.value.firstDuplicateKey).first
        }
    }

    /// A human-readable rendering of a path, such as `apps[1].platforms.ios`.
    static func describe(_ path: some Collection<YAMLPathComponent>) -> String {
        guard !path.isEmpty else { return "the document root" }
        var result = ""
        for component in path {
            switch component {
            case let .key(key): result += result.isEmpty ? key : "." + key
            case let .index(index): result += "[\(index)]"
            }
        }
        return result
    }
}
