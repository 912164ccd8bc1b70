public import JSONBytes
public import ListDiff

/// The answer of `POST /v1/diff`: every form of `result`, each new element written by
/// `newElement` from its index in the new list,
/// `{"inserts","deletes","updates","moves","change_count","batch","sequential","patch"}`.
public func diffDocument<Identifier>(_ result: IndexDiff<Identifier>, newElement: (inout JSONWriter, Int) -> Void) -> [UInt8] {
    var json = JSONWriter(capacity: 1024)
    json.literal("{\"inserts\":")
    json.ints(result.inserts)
    json.literal(",\"deletes\":")
    json.ints(result.deletes)
    json.literal(",\"updates\":")
    json.ints(result.updates)
    json.literal(",\"moves\":")
    json.array(result.moves) { json, move in json.pair(move.from, move.to) }
    json.literal(",\"change_count\":")
    json.int(result.changeCount)
    json.literal(",\"batch\":")
    json.batch(result.batch)
    json.literal(",\"sequential\":")
    json.array(result.sequential.operations) { json, step in json.sequentialStep(step) }
    json.literal(",\"patch\":")
    json.array(result.jsonPatch().operations) { json, operation in
        json.patchOperation(operation) { json, value in
            if case .element(let newIndex) = value { newElement(&json, newIndex) }
        }
    }
    json.literal("}")
    return json.bytes
}

/// The wire form of ListDiff's results, written once for every answer that carries one: the
/// feed's deltas (whose values are sections and items) and `POST /v1/diff` (whose values are the
/// posted elements). The caller writes the values; everything around them is written here.
extension JSONWriter {
    /// `{"deletes":[…],"inserts":[…],"moves":[[from,to],…],"reloads":[…]}` over indexes.
    public mutating func batch(_ batch: BatchUpdate) {
        self.batch(deletes: batch.deletes, inserts: batch.inserts, moves: batch.moves, reloads: batch.reloads) { $0.int($1) }
    }

    /// The four lists of a batch update, in UIKit's order of application, each position written
    /// by `position` (an index, or `[section,item]`).
    public mutating func batch<Position>(
        deletes: [Position], inserts: [Position], moves: [Move<Position>], reloads: [Position],
        position: (inout JSONWriter, Position) -> Void
    ) {
        func list(_ name: String, _ positions: [Position]) {
            raw(name)
            array(positions) { position(&$0, $1) }
        }
        list("{\"deletes\":", deletes)
        list(",\"inserts\":", inserts)
        literal(",\"moves\":")
        array(moves) { json, move in
            json.literal("[")
            position(&json, move.from)
            json.literal(",")
            position(&json, move.to)
            json.literal("]")
        }
        list(",\"reloads\":", reloads)
        literal("}")
    }

    /// `,"name":{"deletes":[…],"inserts":[…],"moves":[…],"reloads":[…]}` as a delta writes it:
    /// each list only when it has something, the member only when one does.
    mutating func batchLists<Position>(
        _ name: String, deletes: [Position], inserts: [Position], moves: [Move<Position>], reloads: [Position],
        position: (inout JSONWriter, Position) -> Void
    ) {
        guard !(deletes.isEmpty && inserts.isEmpty && moves.isEmpty && reloads.isEmpty) else { return }
        // Keys a piece at a time: an interpolated string cost about 400 instructions (callgrind).
        literal(",\"")
        raw(name)
        literal("\":{")
        var first = true
        func list<Element>(_ key: String, _ elements: [Element], _ element: (inout JSONWriter, Element) -> Void) {
            guard !elements.isEmpty else { return }
            raw(first ? "\"" : ",\"")
            raw(key)
            literal("\":")
            first = false
            array(elements, element: element)
        }
        list("deletes", deletes, position)
        list("inserts", inserts, position)
        list("moves", moves) { json, move in
            json.literal("[")
            position(&json, move.from)
            json.literal(",")
            position(&json, move.to)
            json.literal("]")
        }
        list("reloads", reloads, position)
        literal("}")
    }

    /// `,"name":[…]` when `elements` has any, each written by `element`; nothing otherwise.
    mutating func member<Element>(_ name: String, _ elements: [Element], element: (inout JSONWriter, Element) -> Void) {
        guard !elements.isEmpty else { return }
        literal(",\"")
        raw(name)
        literal("\":")
        array(elements, element: element)
    }

    /// `[section,item]`.
    public mutating func path(_ path: ItemPath) {
        pair(path.section, path.item)
    }

    /// `[first,second]`, written a piece at a time: an interpolated string for each of them
    /// (every item path of every delta) cost about 1,200 instructions (callgrind).
    public mutating func pair(_ first: Int, _ second: Int) {
        literal("[")
        int(first)
        literal(",")
        int(second)
        literal("]")
    }

    /// `[e0,e1,…]`, each element written by `element`.
    public mutating func array<Element>(_ elements: some Sequence<Element>, element: (inout JSONWriter, Element) -> Void) {
        literal("[")
        for (index, value) in elements.enumerated() {
            if index > 0 { literal(",") }
            element(&self, value)
        }
        literal("]")
    }

    /// One sequential step: `{"op":"remove"|"insert"|"move"|"change", …}` with `index` and
    /// `count`, or `from` and `to` for a move.
    ///
    /// - Parameters:
    ///   - target: `"sections"` or `"items"` in a sectioned update (also the name of the values'
    ///     member), nil in a flat one.
    ///   - section: the section an item step applies to.
    ///   - value: writes the new value at an index an insert or change covers, into an array
    ///     named `target`; nil writes no values.
    public mutating func sequentialStep(
        _ step: SequentialOperation, target: String? = nil, section: Int? = nil,
        value: ((inout JSONWriter, Int) -> Void)? = nil
    ) {
        // Members written a piece at a time, not interpolated into strings first.
        let (op, names, numbers, covered): (String, (String, String), (Int, Int), Range<Int>?) =
            switch step {
            case .remove(let at, let count): ("remove", ("index", "count"), (at, count), nil)
            case .insert(let at, let count): ("insert", ("index", "count"), (at, count), at..<at + count)
            case .move(let from, let to): ("move", ("from", "to"), (from, to), nil)
            case .change(let at, let count): ("change", ("index", "count"), (at, count), at..<at + count)
            }
        literal("{\"op\":")
        string(op)
        if let target {
            literal(",\"target\":")
            string(target)
        }
        if let section {
            literal(",\"section\":")
            int(section)
        }
        literal(",")
        key(names.0)
        int(numbers.0)
        literal(",")
        key(names.1)
        int(numbers.1)
        if let covered, let value, let target {
            literal(",")
            key(target)
            array(covered) { value(&$0, $1) }
        }
        literal("}")
    }

    /// One RFC 6902 operation: `{"op":…,"path":…}` with `from` for a move and `value` (written by
    /// `value`) when the operation carries one.
    public mutating func patchOperation(
        _ operation: JSONPatchOperation, value: (inout JSONWriter, JSONPatchOperation.Value) -> Void
    ) {
        literal("{\"op\":")
        string(operation.kind.rawValue)
        literal(",\"path\":")
        string(operation.path.description)
        if let from = operation.from {
            literal(",\"from\":")
            string(from.description)
        }
        if let carried = operation.value {
            literal(",\"value\":")
            value(&self, carried)
        }
        literal("}")
    }
}
