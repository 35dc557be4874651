import Foundation

/// The state of a sectioned list as identifiers, with Apple's API (UIKit's and AppKit's type, which
/// Linux lacks). A fetched results controller delivers one per change batch to delegates that
/// implement `controller(_:didChangeContentWith:)`.
///
/// Invariant: each section identifier appears once, each item identifier once across all sections.
public struct NSDiffableDataSourceSnapshot<SectionIdentifierType: Hashable, ItemIdentifierType: Hashable>: Sendable
where SectionIdentifierType: Sendable, ItemIdentifierType: Sendable {
    /// The sections and items. A snapshot made by `init(building:)` builds them on first use.
    private var box: SnapshotBox<SectionIdentifierType, ItemIdentifierType>

    /// An empty snapshot.
    public init() { box = SnapshotBox(SnapshotContents()) }

    /// A snapshot whose contents `build` makes the first time they are read or changed (on any
    /// thread): what a fetched results controller offers its delegate, so that a delegate that
    /// doesn't read it costs nothing.
    init(building build: @escaping @Sendable () -> SnapshotContents<SectionIdentifierType, ItemIdentifierType>) {
        box = SnapshotBox(building: build)
    }

    private var contents: SnapshotContents<SectionIdentifierType, ItemIdentifierType> { box.contents }

    /// Changes the contents in place, copying them first when another snapshot shares them.
    private mutating func change<Result>(_ body: (inout SnapshotContents<SectionIdentifierType, ItemIdentifierType>) -> Result) -> Result {
        if !isKnownUniquelyReferenced(&box) { box = SnapshotBox(box.contents) }
        return box.change(body)
    }

    /// Items marked for reloading.
    public var reloadedItemIdentifiers: [ItemIdentifierType] { contents.reloadedItems }
    /// Items marked for reconfiguring.
    public var reconfiguredItemIdentifiers: [ItemIdentifierType] { contents.reconfiguredItems }
    /// Sections marked for reloading.
    public var reloadedSectionIdentifiers: [SectionIdentifierType] { contents.reloadedSections }

    /// The number of items in all sections.
    public var numberOfItems: Int { contents.sectionOfItem.count }
    /// The number of sections.
    public var numberOfSections: Int { contents.sectionOrder.count }
    /// The sections, in order.
    public var sectionIdentifiers: [SectionIdentifierType] { contents.sectionOrder }
    /// All items, section by section.
    public var itemIdentifiers: [ItemIdentifierType] {
        let contents = contents
        return contents.sectionOrder.flatMap { contents.itemsBySection[$0] ?? [] }
    }

    /// The number of items in a section.
    public func numberOfItems(inSection identifier: SectionIdentifierType) -> Int { contents.itemsBySection[identifier]?.count ?? 0 }
    /// The items of a section, in order.
    public func itemIdentifiers(inSection identifier: SectionIdentifierType) -> [ItemIdentifierType] { contents.itemsBySection[identifier] ?? [] }
    /// The section holding an item.
    public func sectionIdentifier(containingItem identifier: ItemIdentifierType) -> SectionIdentifierType? { contents.sectionOfItem[identifier] }
    /// The position of an item among all items.
    public func indexOfItem(_ identifier: ItemIdentifierType) -> Int? { itemIdentifiers.firstIndex(of: identifier) }
    /// The position of a section.
    public func indexOfSection(_ identifier: SectionIdentifierType) -> Int? { contents.sectionOrder.firstIndex(of: identifier) }

    /// Adds sections at the end.
    public mutating func appendSections(_ identifiers: [SectionIdentifierType]) {
        change { $0.appendSections(identifiers) }
    }

    /// Adds items at the end of a section (the last section when nil).
    public mutating func appendItems(_ identifiers: [ItemIdentifierType], toSection sectionIdentifier: SectionIdentifierType? = nil) {
        change { $0.appendItems(identifiers, toSection: sectionIdentifier) }
    }

    /// Inserts items before another item.
    public mutating func insertItems(_ identifiers: [ItemIdentifierType], beforeItem: ItemIdentifierType) {
        change { $0.insert(identifiers, near: beforeItem, offset: 0) }
    }

    /// Inserts items after another item.
    public mutating func insertItems(_ identifiers: [ItemIdentifierType], afterItem: ItemIdentifierType) {
        change { $0.insert(identifiers, near: afterItem, offset: 1) }
    }

    /// Removes items.
    public mutating func deleteItems(_ identifiers: [ItemIdentifierType]) {
        change { $0.deleteItems(identifiers) }
    }

    /// Removes every section and item.
    public mutating func deleteAllItems() {
        self = NSDiffableDataSourceSnapshot()
    }

    /// Removes sections and their items.
    public mutating func deleteSections(_ identifiers: [SectionIdentifierType]) {
        change { $0.deleteSections(identifiers) }
    }

    /// Moves an item before another one.
    public mutating func moveItem(_ identifier: ItemIdentifierType, beforeItem: ItemIdentifierType) {
        deleteItems([identifier])
        insertItems([identifier], beforeItem: beforeItem)
    }

    /// Moves an item after another one.
    public mutating func moveItem(_ identifier: ItemIdentifierType, afterItem: ItemIdentifierType) {
        deleteItems([identifier])
        insertItems([identifier], afterItem: afterItem)
    }

    /// Marks items to be reloaded.
    public mutating func reloadItems(_ identifiers: [ItemIdentifierType]) {
        change { contents in contents.reloadedItems.append(contentsOf: identifiers.filter { contents.sectionOfItem[$0] != nil }) }
    }

    /// Marks items to be reconfigured.
    public mutating func reconfigureItems(_ identifiers: [ItemIdentifierType]) {
        change { contents in contents.reconfiguredItems.append(contentsOf: identifiers.filter { contents.sectionOfItem[$0] != nil }) }
    }

    /// Marks sections to be reloaded.
    public mutating func reloadSections(_ identifiers: [SectionIdentifierType]) {
        change { contents in contents.reloadedSections.append(contentsOf: identifiers.filter { contents.itemsBySection[$0] != nil }) }
    }
}

/// A snapshot's sections and items.
///
/// Invariant: each section identifier appears once in `sectionOrder` and as a key of
/// `itemsBySection`; each item appears once across all sections, and `sectionOfItem` maps it to its section.
struct SnapshotContents<SectionIdentifierType: Hashable & Sendable, ItemIdentifierType: Hashable & Sendable>: Sendable {
    var sectionOrder: [SectionIdentifierType] = []
    var itemsBySection: [SectionIdentifierType: [ItemIdentifierType]] = [:]
    var sectionOfItem: [ItemIdentifierType: SectionIdentifierType] = [:]
    var reloadedItems: [ItemIdentifierType] = []
    var reconfiguredItems: [ItemIdentifierType] = []
    var reloadedSections: [SectionIdentifierType] = []

    mutating func appendSections(_ identifiers: [SectionIdentifierType]) {
        for identifier in identifiers {
            coreDataPrecondition(itemsBySection[identifier] == nil, "Section identifier \(identifier) is already in the snapshot.")
            sectionOrder.append(identifier)
            itemsBySection[identifier] = []
        }
    }

    mutating func appendItems(_ identifiers: [ItemIdentifierType], toSection sectionIdentifier: SectionIdentifierType?) {
        guard let section = sectionIdentifier ?? sectionOrder.last else {
            coreDataMisuse("appendItems needs a section: append one first.")
        }
        coreDataPrecondition(itemsBySection[section] != nil, "Section identifier \(section) is not in the snapshot.")
        sectionOfItem.reserveCapacity(sectionOfItem.count + identifiers.count)
        for identifier in identifiers {
            let previous = sectionOfItem.updateValue(section, forKey: identifier)
            coreDataPrecondition(previous == nil, "Item identifier \(identifier) is already in the snapshot.")
        }
        itemsBySection[section]!.append(contentsOf: identifiers)
    }

    mutating func insert(_ identifiers: [ItemIdentifierType], near anchor: ItemIdentifierType, offset: Int) {
        guard let section = sectionOfItem[anchor], let index = itemsBySection[section]?.firstIndex(of: anchor) else {
            coreDataMisuse("Item identifier \(anchor) is not in the snapshot.")
        }
        for identifier in identifiers { sectionOfItem[identifier] = section }
        itemsBySection[section]!.insert(contentsOf: identifiers, at: index + offset)
    }

    mutating func deleteItems(_ identifiers: [ItemIdentifierType]) {
        for identifier in identifiers {
            guard let section = sectionOfItem.removeValue(forKey: identifier) else { continue }
            itemsBySection[section]?.removeAll { $0 == identifier }
        }
    }

    mutating func deleteSections(_ identifiers: [SectionIdentifierType]) {
        for identifier in identifiers {
            for item in itemsBySection.removeValue(forKey: identifier) ?? [] { sectionOfItem[item] = nil }
            sectionOrder.removeAll { $0 == identifier }
        }
    }
}

/// Holds a snapshot's contents, or what builds them on first use. Shared by copies of a snapshot
/// until one of them changes (copy on write); the lock makes the first use safe from any thread.
final class SnapshotBox<SectionIdentifierType: Hashable & Sendable, ItemIdentifierType: Hashable & Sendable>: Sendable {
    private typealias Contents = SnapshotContents<SectionIdentifierType, ItemIdentifierType>

    private enum State {
        case built(Contents)
        case pending(@Sendable () -> Contents)
    }

    private let state: LockedValue<State>

    init(_ contents: SnapshotContents<SectionIdentifierType, ItemIdentifierType>) { state = LockedValue(.built(contents)) }
    init(building build: @escaping @Sendable () -> SnapshotContents<SectionIdentifierType, ItemIdentifierType>) { state = LockedValue(.pending(build)) }

    /// The contents, built now if they weren't yet.
    var contents: SnapshotContents<SectionIdentifierType, ItemIdentifierType> {
        state.withLock(Self.build)
    }

    /// Changes the contents in place.
    func change<Result>(_ body: (inout SnapshotContents<SectionIdentifierType, ItemIdentifierType>) -> Result) -> Result {
        state.withLock { state in
            var contents = Self.build(&state)
            state = .built(Contents())  // the only reference left is `contents`: changed without a copy
            defer { state = .built(contents) }
            return body(&contents)
        }
    }

    private static func build(_ state: inout State) -> Contents {
        switch state {
        case .built(let contents):
            return contents
        case .pending(let build):
            let contents = build()
            state = .built(contents)
            return contents
        }
    }
}
