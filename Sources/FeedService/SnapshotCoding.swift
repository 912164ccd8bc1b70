import Deterministic
import FeedStore
import FeedWire

/// The binary form of a stored ``SnapshotStructure``, about half the size of its JSON and
/// written with plain byte copies:
///
///     0x01 viewer limit offset width+1|0 stack_ads(0|1) sectionCount
///       { id kind itemCount { id version } }
///
/// Integers are LEB128 varints (zigzag for the viewer); strings are a varint length and UTF-8
/// bytes; an item version of 16 lowercase hex digits is 8 bytes after a 0x00 tag, any other
/// text is a 0x01 tag and a string.
///
/// A snapshot that differs little from an earlier one of the same viewer (a like changed one
/// item's version; the same feed asked with another width or limit) is stored as that base's id,
/// its own parameters and the difference, tens of bytes instead of kilobytes
/// (``encode(_:against:baseID:)``):
///
///     0x02 baseID limit offset width+1|0 stack_ads sectionCount
///       { 0x00 baseSection                                    -- the base's section, as it was
///       | 0x01 baseSection changeCount { itemIndex version }  -- the same items, some versions new
///       | 0x02 id kind itemCount { id version }                -- a section written out
///       | 0x03 id kind itemCount { reference } }               -- items taken from anywhere in the base
///
/// A reference is a varint: 0 and the item written out (`id version`), or the item's position
/// among all the base's items, plus one, times two, plus one when a new `version` follows. So a
/// new video at the top of the grid, which moves one item of every grid section into the next,
/// costs a byte or two per item instead of the sections written out.
///
/// Since sections have headers and footers and pages a `prefetch` hint, snapshots are written in
/// a second version of both forms, 0x03 (full) and 0x04 (difference); the first version (0x01,
/// 0x02, as above) is still read back. The parameters go on with `kinds+1|0 viewport+1|0
/// prefetch+1|0` (0 for every kind), and a section written out is followed by its views,
/// `flags [id version] [id version]` (bit 0 a header, bit 1 a footer). In the difference form a
/// section taken from the base keeps the base section's views (tags 0 and 1), or is followed by
/// its own (tags 4 and 5, otherwise as 0 and 1), so a like costs no byte for views.
package enum SnapshotCoding {
    static let formatByte: UInt8 = 0x03
    static let deltaFormatByte: UInt8 = 0x04
    /// The first version's bytes, read but no longer written.
    static let formatByteV1: UInt8 = 0x01
    static let deltaFormatByteV1: UInt8 = 0x02
    /// Added to the tag of a section taken from the base whose views differ from the base's.
    private static let ownViews: UInt8 = 4

    /// Whether `bytes` are a snapshot in one of the binary forms (the full form or a difference).
    package static func isBinary(_ bytes: some Collection<UInt8>) -> Bool {
        guard let first = bytes.first else { return false }
        return first == formatByte || first == deltaFormatByte || first == formatByteV1 || first == deltaFormatByteV1
    }

    struct Malformed: Error {}

    package static func encode(_ structure: SnapshotStructure) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + structure.sections.reduce(0) { $0 + 24 + $1.items.count * 24 })
        out.append(formatByte)
        let viewer = structure.viewer
        varint(UInt64(bitPattern: (viewer << 1) ^ (viewer >> 63)), to: &out)
        parameters(structure, to: &out)
        varint(UInt64(structure.sections.count), to: &out)
        for section in structure.sections {
            write(section, to: &out)
            views(of: section, to: &out)
        }
        return out
    }

    /// `limit offset width+1|0 stack_ads(0|1) kinds viewport+1|0 prefetch+1|0`.
    private static func parameters(_ structure: SnapshotStructure, to out: inout [UInt8]) {
        let parameters = structure.parameters
        varint(UInt64(max(0, parameters.limit)), to: &out)
        varint(UInt64(max(0, parameters.offset)), to: &out)
        varint(parameters.width.map { UInt64(max(0, $0)) + 1 } ?? 0, to: &out)
        out.append(parameters.stackAds ? 1 : 0)
        varint(parameters.kinds == .all ? 0 : UInt64(parameters.kinds.rawValue) + 1, to: &out)
        varint(parameters.viewport.map { UInt64(max(0, $0)) + 1 } ?? 0, to: &out)
        varint(structure.prefetch.map { UInt64(max(0, $0)) + 1 } ?? 0, to: &out)
    }

    /// `id kind itemCount { id version }`.
    private static func write(_ section: SnapshotStructure.Section, to out: inout [UInt8]) {
        string(section.id, to: &out)
        string(section.kind, to: &out)
        varint(UInt64(section.items.count), to: &out)
        for item in section.items {
            string(item.id, to: &out)
            version(item.version, to: &out)
        }
    }

    /// `flags [id version] [id version]`: bit 0 a header, bit 1 a footer.
    private static func views(of section: SnapshotStructure.Section, to out: inout [UInt8]) {
        out.append((section.header == nil ? 0 : 1) | (section.footer == nil ? 0 : 2))
        for view in [section.header, section.footer] {
            guard let view else { continue }
            string(view.id, to: &out)
            version(view.version, to: &out)
        }
    }

    /// 0x00 and the version's 8 bytes. (Stores written before versions were kept as numbers
    /// may hold 0x01 and a text; only 16 lowercase hex digits are read back from those.)
    private static func version(_ value: UInt64, to out: inout [UInt8]) {
        out.append(0)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// What encoding against a base looks up in it, kept with the base (a base serves many
    /// snapshots: building these for each one was most of the encoding's time). The items' table
    /// is built on first use, and only for an item that is not the one after the base item
    /// referenced last: a section that does not match its base's by id, kind and item count is
    /// mostly a run of the base's items (a new video at the top slides every grid section's
    /// items one place along), found by walking the base. A base that never needs the table
    /// keeps its memory. Not thread-safe: the persister uses it under its lock.
    package final class BaseLookup {
        /// Each section's index, by id (the first of duplicates).
        let sections: [String: Int]
        /// Where each of the base's sections starts among all of its items.
        let sectionStarts: [Int]
        private let base: SnapshotStructure
        private var itemTable: ItemTable?

        /// An item of the base: its section and its index there.
        struct Place {
            var section: Int
            var item: Int
        }

        package init(_ base: SnapshotStructure) {
            var sections: [String: Int] = [:]
            var starts: [Int] = []
            starts.reserveCapacity(base.sections.count)
            var position = 0
            for (index, section) in base.sections.enumerated() {
                if sections[section.id] == nil { sections[section.id] = index }
                starts.append(position)
                position += section.items.count
            }
            self.sections = sections
            sectionStarts = starts
            self.base = base
        }

        /// The item's position among all of the base's items.
        func position(of place: Place) -> Int { sectionStarts[place.section] + place.item }

        /// The base's item at `place`.
        func item(at place: Place) -> SnapshotStructure.Item { base.sections[place.section].items[place.item] }

        /// The last item of the base's section `index`, or nil when it has none.
        func lastItem(ofSection index: Int) -> Place? {
            base.sections[index].items.isEmpty ? nil : Place(section: index, item: base.sections[index].items.count - 1)
        }

        /// Where the base item with `id` is: the one after `previous` when it has that id, else
        /// the first of that id anywhere in the base, or nil when the base lacks it.
        func find(_ id: String, after previous: Place?) -> Place? {
            if var next = previous {
                next.item += 1
                while next.section < base.sections.count, next.item >= base.sections[next.section].items.count {
                    next = Place(section: next.section + 1, item: 0)
                }
                if next.section < base.sections.count, base.sections[next.section].items[next.item].id == id { return next }
            }
            if itemTable == nil { itemTable = ItemTable(base) }
            return itemTable?.place(of: id, in: base)
        }
    }

    /// Where each of a base's items is, by id (the first of duplicate ids): open addressing over
    /// the ids' 64-bit FNV-1a hashes, probed linearly, a hit checked against the base's id.
    /// A `[String: Place]` hashed every id with SipHash and was a tenth of the maintenance
    /// thread's time at 500 writes/s, where pages shift and viewers take new bases often.
    struct ItemTable {
        /// A slot: an item's hash and place (`section` -1 for an empty slot).
        private struct Slot {
            var hash: UInt64
            var section: Int32
            var item: Int32
        }

        private var slots: [Slot]
        private let mask: Int

        init(_ base: SnapshotStructure) {
            let count = base.sections.reduce(0) { $0 + $1.items.count }
            var capacity = 8
            while capacity < count * 2 { capacity *= 2 }
            slots = Array(repeating: Slot(hash: 0, section: -1, item: 0), count: capacity)
            mask = capacity - 1
            for (sectionIndex, section) in base.sections.enumerated() {
                for (itemIndex, item) in section.items.enumerated() {
                    let hash = Self.hash(item.id)
                    let index = slot(of: item.id, hash: hash, in: base)
                    // A duplicate id keeps the first item's place.
                    if slots[index].section < 0 { slots[index] = Slot(hash: hash, section: Int32(sectionIndex), item: Int32(itemIndex)) }
                }
            }
        }

        /// The place of the first item of `base` (the structure the table was built from) with
        /// this id, nil when it has none.
        func place(of id: String, in base: SnapshotStructure) -> BaseLookup.Place? {
            let found = slots[slot(of: id, hash: Self.hash(id), in: base)]
            return found.section < 0 ? nil : BaseLookup.Place(section: Int(found.section), item: Int(found.item))
        }

        /// The slot holding `id` (whose hash is `hash`), or the empty slot where it would go.
        private func slot(of id: String, hash: UInt64, in base: SnapshotStructure) -> Int {
            var index = Self.start(hash, mask)
            while slots[index].section >= 0, slots[index].hash != hash || Self.item(at: slots[index], in: base).id != id {
                index = (index + 1) & mask
            }
            return index
        }

        private static func item(at slot: Slot, in base: SnapshotStructure) -> SnapshotStructure.Item {
            base.sections[Int(slot.section)].items[Int(slot.item)]
        }

        private static func hash(_ id: String) -> UInt64 {
            var hasher = StableHasher()
            hasher.combine(id)
            return hasher.state
        }

        /// The first slot to probe. FNV-1a's multiply carries each byte into the higher bits
        /// only, so the low bits the mask keeps depend on the least: the high half is folded in.
        private static func start(_ hash: UInt64, _ mask: Int) -> Int {
            Int(truncatingIfNeeded: hash ^ (hash >> 32)) & mask
        }
    }

    /// `structure` as the difference from `base` (whose id is `baseID`), or nil when that is not
    /// worth it: another viewer, or a difference over two thirds of the full form. `lookup` is
    /// `base`'s (built here when nil).
    ///
    /// Why two thirds: under steady likes every item of a page changes version within a second
    /// or two, and a difference that names each item's new version levels off at about half the
    /// full form. With a limit of a third, such pages took a new base every second or two: a
    /// full structure stored a third of the time, logged on PostgreSQL (38 MB of WAL in 14 s at
    /// 500 writes/s, 6 MB with two thirds; BENCHMARKS, session 28). A new base pays only when
    /// the page is mostly other items than its base's.
    package static func encode(_ structure: SnapshotStructure, against base: SnapshotStructure, baseID: String, lookup: BaseLookup? = nil) -> [UInt8]? {
        guard structure.viewer == base.viewer else { return nil }
        var out: [UInt8] = [deltaFormatByte]
        out.reserveCapacity(64 + 2 * structure.sections.count)
        string(baseID, to: &out)
        parameters(structure, to: &out)
        varint(UInt64(structure.sections.count), to: &out)
        let lookup = lookup ?? BaseLookup(base)
        let baseIndex = lookup.sections
        // The base item referenced last: the next section's items most often go on from there.
        var previous: BaseLookup.Place?
        for (position, section) in structure.sections.enumerated() {
            // Sections mostly keep their place, and a page patched since the base shares the
            // items of the sections it did not touch: those need no comparison item by item.
            let samePlace = position < base.sections.count && base.sections[position].id == section.id
            if samePlace, base.sections[position].kind == section.kind, !section.items.isEmpty,
                base.sections[position].items.sharesStorage(with: section.items),
                section.header == base.sections[position].header, section.footer == base.sections[position].footer
            {
                out.append(0)
                varint(UInt64(position), to: &out)
                previous = lookup.lastItem(ofSection: position) ?? previous
                continue
            }
            if let index = samePlace ? position : baseIndex[section.id], base.sections[index].kind == section.kind,
                base.sections[index].items.count == section.items.count,
                zip(base.sections[index].items, section.items).allSatisfy({ $0.id == $1.id })
            {
                let changed = section.items.indices.filter { section.items[$0].version != base.sections[index].items[$0].version }
                let sameViews = section.header == base.sections[index].header && section.footer == base.sections[index].footer
                out.append((changed.isEmpty ? 0 : 1) + (sameViews ? 0 : ownViews))
                varint(UInt64(index), to: &out)
                if !changed.isEmpty {
                    varint(UInt64(changed.count), to: &out)
                    for item in changed {
                        varint(UInt64(item), to: &out)
                        version(section.items[item].version, to: &out)
                    }
                }
                if !sameViews { views(of: section, to: &out) }
                previous = lookup.lastItem(ofSection: index) ?? previous
                continue
            }
            // Items taken from anywhere in the base, when at least half of them are there.
            let start = out.count
            out.append(3)
            string(section.id, to: &out)
            string(section.kind, to: &out)
            varint(UInt64(section.items.count), to: &out)
            var referenced = 0
            for item in section.items {
                guard let place = lookup.find(item.id, after: previous) else {
                    out.append(0)
                    string(item.id, to: &out)
                    version(item.version, to: &out)
                    continue
                }
                referenced += 1
                previous = place
                let changed = lookup.item(at: place).version != item.version
                varint(UInt64(lookup.position(of: place) + 1) * 2 + (changed ? 1 : 0), to: &out)
                if changed { version(item.version, to: &out) }
            }
            if referenced * 2 < section.items.count {
                out.removeSubrange(start...)
                out.append(2)
                write(section, to: &out)
            }
            views(of: section, to: &out)
        }
        // ``fullSize(of:)`` is at least 8 bytes, 4 a section and 10 an item: most differences are
        // known to be small enough without adding up their ids.
        let itemCount = structure.sections.reduce(0) { $0 + $1.items.count }
        if isWithinLimit(out.count, ofFullSize: 8 + 4 * structure.sections.count + 10 * itemCount) { return out }
        return isWithinLimit(out.count, ofFullSize: fullSize(of: structure)) ? out : nil
    }

    /// Whether a difference of `size` bytes is stored against its base, for a full form of
    /// `fullSize` bytes: at most two thirds of it.
    private static func isWithinLimit(_ size: Int, ofFullSize fullSize: Int) -> Bool {
        size * 3 <= fullSize * 2
    }

    /// The size of `structure`'s full form, give or take the varints' bytes, without writing it.
    static func fullSize(of structure: SnapshotStructure) -> Int {
        var size = 8
        for section in structure.sections {
            size += section.id.utf8.count + section.kind.utf8.count + 4
            for item in section.items { size += item.id.utf8.count + 10 }
        }
        return size
    }

    /// The base a stored delta form names, or nil for a full form.
    package static func baseID(of bytes: [UInt8]) throws -> String? {
        guard bytes.first == deltaFormatByte || bytes.first == deltaFormatByteV1 else { return nil }
        var reader = Reader(bytes: bytes, position: 1)
        return try reader.string()
    }

    /// Reads a delta form back against its base.
    package static func decode(_ bytes: [UInt8], base: SnapshotStructure) throws -> SnapshotStructure {
        guard bytes.first == deltaFormatByte || bytes.first == deltaFormatByteV1 else { throw Malformed() }
        var reader = Reader(bytes: bytes, position: 1, hasViews: bytes.first == deltaFormatByte)
        _ = try reader.string()
        let (parameters, prefetch) = try reader.parameters()
        let sectionCount = Int(try reader.varint())
        guard sectionCount <= bytes.count else { throw Malformed() }
        var sections: [SnapshotStructure.Section] = []
        sections.reserveCapacity(sectionCount)
        var flat: [SnapshotStructure.Item]?
        for _ in 0..<sectionCount {
            let tag = try reader.byte()
            switch tag {
            case 0, 1, ownViews, ownViews + 1:
                guard tag < ownViews || reader.hasViews else { throw Malformed() }
                let index = Int(try reader.varint())
                guard base.sections.indices.contains(index) else { throw Malformed() }
                var section = base.sections[index]
                if tag & 1 == 1 {
                    let changes = Int(try reader.varint())
                    guard changes <= section.items.count else { throw Malformed() }
                    for _ in 0..<changes {
                        let item = Int(try reader.varint())
                        guard section.items.indices.contains(item) else { throw Malformed() }
                        section.items[item].version = try reader.version()
                    }
                }
                if tag >= ownViews { try reader.views(of: &section) }
                sections.append(section)
            case 2:
                var section = try reader.section()
                try reader.views(of: &section)
                sections.append(section)
            case 3:
                if flat == nil { flat = base.sections.flatMap(\.items) }
                let flat = flat!
                let id = try reader.string()
                let kind = try reader.string()
                let itemCount = Int(try reader.varint())
                guard itemCount <= bytes.count else { throw Malformed() }
                var items: [SnapshotStructure.Item] = []
                items.reserveCapacity(itemCount)
                for _ in 0..<itemCount {
                    let code = try reader.varint()
                    if code == 0 {
                        let itemID = try reader.string()
                        items.append(SnapshotStructure.Item(id: itemID, version: try reader.version()))
                        continue
                    }
                    guard code >= 2, code / 2 - 1 < UInt64(flat.count) else { throw Malformed() }
                    var item = flat[Int(code / 2 - 1)]
                    if code % 2 == 1 { item.version = try reader.version() }
                    items.append(item)
                }
                var section = SnapshotStructure.Section(id: id, kind: kind, items: items)
                try reader.views(of: &section)
                sections.append(section)
            default:
                throw Malformed()
            }
        }
        guard reader.position == bytes.count else { throw Malformed() }
        return SnapshotStructure(viewer: base.viewer, parameters: parameters, sections: sections, prefetch: prefetch)
    }

    package static func decode(_ bytes: [UInt8]) throws -> SnapshotStructure {
        guard bytes.first == formatByte || bytes.first == formatByteV1 else { throw Malformed() }
        var reader = Reader(bytes: bytes, position: 1, hasViews: bytes.first == formatByte)
        let zigzag = try reader.varint()
        let viewer = Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
        let (parameters, prefetch) = try reader.parameters()
        let sectionCount = Int(try reader.varint())
        guard sectionCount <= bytes.count else { throw Malformed() }
        var sections: [SnapshotStructure.Section] = []
        sections.reserveCapacity(sectionCount)
        for _ in 0..<sectionCount {
            var section = try reader.section()
            try reader.views(of: &section)
            sections.append(section)
        }
        guard reader.position == bytes.count else { throw Malformed() }
        return SnapshotStructure(viewer: viewer, parameters: parameters, sections: sections, prefetch: prefetch)
    }

    private static func varint(_ value: UInt64, to out: inout [UInt8]) {
        LEB128.append(value, to: &out)
    }

    private static func string(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            varint(UInt64(bytes.count), to: &out)
            out.append(contentsOf: bytes)
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var position: Int
        /// Whether this is the second version (views after sections, more parameters).
        var hasViews = true

        mutating func byte() throws -> UInt8 {
            guard position < bytes.count else { throw Malformed() }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func varint() throws -> UInt64 {
            guard let value = LEB128.read(bytes, at: &position) else { throw Malformed() }
            return value
        }

        mutating func parameters() throws -> (FeedParameters, prefetch: Int?) {
            let limit = Int(try varint())
            let offset = Int(try varint())
            let width = try varint()
            let stackAds = try byte() == 1
            var parameters = FeedParameters(limit: limit, offset: offset, width: width == 0 ? nil : Int(width - 1), stackAds: stackAds)
            guard hasViews else { return (parameters, nil) }
            let kinds = try varint()
            guard kinds <= UInt64(UInt32.max) + 1 else { throw Malformed() }
            parameters.kinds = kinds == 0 ? .all : ItemKinds(rawValue: UInt32(kinds - 1))
            let viewport = try varint()
            parameters.viewport = viewport == 0 ? nil : Int(truncatingIfNeeded: viewport - 1)
            let prefetch = try varint()
            return (parameters, prefetch == 0 ? nil : Int(truncatingIfNeeded: prefetch - 1))
        }

        /// The views written after a section (none in the first version).
        mutating func views(of section: inout SnapshotStructure.Section) throws {
            guard hasViews else { return }
            let flags = try byte()
            guard flags & ~3 == 0 else { throw Malformed() }
            section.header = flags & 1 == 0 ? nil : SnapshotStructure.Item(id: try string(), version: try version())
            section.footer = flags & 2 == 0 ? nil : SnapshotStructure.Item(id: try string(), version: try version())
        }

        mutating func section() throws -> SnapshotStructure.Section {
            let id = try string()
            let kind = try string()
            let itemCount = Int(try varint())
            guard itemCount <= bytes.count else { throw Malformed() }
            var items: [SnapshotStructure.Item] = []
            items.reserveCapacity(itemCount)
            for _ in 0..<itemCount {
                let itemID = try string()
                items.append(SnapshotStructure.Item(id: itemID, version: try version()))
            }
            return SnapshotStructure.Section(id: id, kind: kind, items: items)
        }

        mutating func version() throws -> UInt64 {
            switch try byte() {
            case 0:
                var value: UInt64 = 0
                for _ in 0..<8 { value = value << 8 | UInt64(try byte()) }
                return value
            case 1:
                guard let value = SnapshotStructure.Item.versionValue(try string()) else { throw Malformed() }
                return value
            default:
                throw Malformed()
            }
        }

        mutating func string() throws -> String {
            let count = Int(try varint())
            guard count >= 0, count <= bytes.count - position else { throw Malformed() }
            defer { position += count }
            return String(decoding: bytes[position..<position + count], as: UTF8.self)
        }
    }
}
