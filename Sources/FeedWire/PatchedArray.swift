/// An array that shares its elements with the one it was changed from: that array, untouched,
/// and the few elements replaced since.
///
/// A like changes one item of a page, so one of its twenty sections. A page kept as a plain
/// array was copied whole for it, counting up a reference in each section (and down again when
/// the old page left), on memory the processor's caches no longer held: a like on a popular
/// video does this for thousands of pages in a row. Replacing an element here copies only the
/// replaced ones; past ``maxReplaced`` of them the array is folded into a new base, so reading
/// an element never looks through more than that many.
@frozen public struct PatchedArray<Element> {
    /// The elements as they were, shared with the arrays this one was patched from.
    @usableFromInline var base: [Element]
    /// The elements replaced since, ascending by index, each index once.
    @usableFromInline var replaced: [Replacement]

    @usableFromInline struct Replacement {
        @usableFromInline var index: Int
        @usableFromInline var element: Element

        @inlinable init(index: Int, element: Element) {
            self.index = index
            self.element = element
        }
    }

    /// How many replaced elements an array keeps beside its base before folding them in.
    @inlinable public static var maxReplaced: Int { 8 }

    /// The elements of `elements`.
    @inlinable public init(_ elements: [Element]) {
        base = elements
        replaced = []
    }

    /// The elements as one plain array (the base itself when nothing was replaced).
    @inlinable public var array: [Element] {
        guard !replaced.isEmpty else { return base }
        var merged = base
        for replacement in replaced { merged[replacement.index] = replacement.element }
        return merged
    }

    /// Whether the element at `position` is, without comparing it, the one `other` holds
    /// there: both were patched from the same array and neither replaced it since.
    @inlinable public func sharesElement(at position: Int, with other: PatchedArray) -> Bool {
        guard base.count == other.base.count, !base.isEmpty, position >= 0, position < base.count else { return false }
        let sameBase = base.withUnsafeBufferPointer { mine in other.base.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress } }
        return sameBase && !replaced.contains { $0.index == position } && !other.replaced.contains { $0.index == position }
    }

    /// Makes room for `count` more replaced elements: folds those it has into a new base now if
    /// they would pass ``maxReplaced`` (one copy, instead of some of them made beside the base
    /// and then folded with it).
    @inlinable public mutating func reserveReplacements(_ count: Int) {
        if replaced.count + count > Self.maxReplaced { fold() }
    }

    /// Folds the replaced elements into a base of their own.
    @inlinable mutating func fold() {
        base = array
        replaced = []
    }
}

extension PatchedArray: RandomAccessCollection, MutableCollection {
    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { base.count }

    @inlinable public subscript(position: Int) -> Element {
        // Read in place, as an array's subscript is: a returned copy counted up (and then down)
        // every reference the element holds at each read of one of its fields, and a `_read`
        // coroutine was not inlined. The address is in the storage of `base` or of `replaced`,
        // which this value holds, unchanged, while the access lasts.
        unsafeAddress {
            precondition(position >= 0 && position < base.count, "PatchedArray index out of range")
            var offset = 0
            while offset < replaced.count, replaced[offset].index != position { offset += 1 }
            guard offset < replaced.count else { return base.withUnsafeBufferPointer { $0.baseAddress! + position } }
            let field = MemoryLayout<Replacement>.offset(of: \Replacement.element)!
            return replaced.withUnsafeBufferPointer { buffer in
                UnsafeRawPointer(buffer.baseAddress! + offset).advanced(by: field).assumingMemoryBound(to: Element.self)
            }
        }
        set {
            precondition(position >= 0 && position < base.count, "PatchedArray index out of range")
            var at = replaced.endIndex
            for (offset, replacement) in replaced.enumerated() where replacement.index >= position {
                if replacement.index == position {
                    replaced[offset].element = newValue
                    return
                }
                at = offset
                break
            }
            guard replaced.count < Self.maxReplaced else {
                fold()
                base[position] = newValue
                return
            }
            replaced.insert(Replacement(index: position, element: newValue), at: at)
        }
    }

    /// Walks the base and the replaced elements side by side (no search per element).
    public struct Iterator: IteratorProtocol {
        @usableFromInline let array: PatchedArray
        @usableFromInline var position = 0
        /// The first replaced element not yet reached.
        @usableFromInline var pending = 0

        @inlinable init(_ array: PatchedArray) { self.array = array }

        @inlinable public mutating func next() -> Element? {
            guard position < array.base.count else { return nil }
            defer { position += 1 }
            if pending < array.replaced.count, array.replaced[pending].index == position {
                pending += 1
                return array.replaced[pending - 1].element
            }
            return array.base[position]
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(self) }
}

extension PatchedArray: RangeReplaceableCollection {
    @inlinable public init() { self.init([]) }

    /// Inserting or removing elements folds the replaced ones into a new base first.
    @inlinable public mutating func replaceSubrange<C: Collection<Element>>(_ subrange: Range<Int>, with newElements: C) {
        fold()
        base.replaceSubrange(subrange, with: newElements)
    }
}

extension PatchedArray: ExpressibleByArrayLiteral {
    @inlinable public init(arrayLiteral elements: Element...) { self.init(elements) }
}

extension PatchedArray: Sendable where Element: Sendable {}
extension PatchedArray.Replacement: Sendable where Element: Sendable {}

extension PatchedArray: Equatable where Element: Equatable {
    @inlinable public static func == (left: PatchedArray, right: PatchedArray) -> Bool {
        left.elementsEqual(right)
    }
}

extension PatchedArray: Hashable where Element: Hashable {
    @inlinable public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for element in self { hasher.combine(element) }
    }
}

extension PatchedArray: Encodable where Element: Encodable {
    /// As the plain array.
    @inlinable public func encode(to encoder: any Encoder) throws {
        try array.encode(to: encoder)
    }
}

extension PatchedArray: Decodable where Element: Decodable {
    @inlinable public init(from decoder: any Decoder) throws {
        self.init(try [Element](from: decoder))
    }
}

extension PatchedArray: CustomStringConvertible {
    @inlinable public var description: String { array.description }
}
