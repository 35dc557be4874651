import Foundation

/// The state of a sectioned list as identifiers, with Apple's API (UIKit's and AppKit's type, which
/// Linux lacks). A fetched results controller delivers one per change batch to delegates that
/// implement `controller(_:didChangeContentWith:)`.
///
/// Invariant: each section identifier appears once, each item identifier once across all sections.
public struct NSDiffableDataSourceSnapshot<SectionIdentifierType: Hashable, ItemIdentifierType: Hashable>: Sendable
where SectionIdentifierType: Sendable, ItemIdentifierType: Sendable {
    private var sectionOrder: [SectionIdentifierType] = []
    private var itemsBySection: [SectionIdentifierType: [ItemIdentifierType]] = [:]
    private var sectionOfItem: [ItemIdentifierType: SectionIdentifierType] = [:]
    /// Items marked for reloading.
    public private(set) var reloadedItemIdentifiers: [ItemIdentifierType] = []
    /// Items marked for reconfiguring.
    public private(set) var reconfiguredItemIdentifiers: [ItemIdentifierType] = []
    /// Sections marked for reloading.
    public private(set) var reloadedSectionIdentifiers: [SectionIdentifierType] = []

    /// An empty snapshot.
    public init() {}

    /// The number of items in all sections.
    public var numberOfItems: Int { sectionOfItem.count }
    /// The number of sections.
    public var numberOfSections: Int { sectionOrder.count }
    /// The sections, in order.
    public var sectionIdentifiers: [SectionIdentifierType] { sectionOrder }
    /// All items, section by section.
    public var itemIdentifiers: [ItemIdentifierType] { sectionOrder.flatMap { itemsBySection[$0] ?? [] } }

    /// The number of items in a section.
    public func numberOfItems(inSection identifier: SectionIdentifierType) -> Int { itemsBySection[identifier]?.count ?? 0 }
    /// The items of a section, in order.
    public func itemIdentifiers(inSection identifier: SectionIdentifierType) -> [ItemIdentifierType] { itemsBySection[identifier] ?? [] }
    /// The section holding an item.
    public func sectionIdentifier(containingItem identifier: ItemIdentifierType) -> SectionIdentifierType? { sectionOfItem[identifier] }
    /// The position of an item among all items.
    public func indexOfItem(_ identifier: ItemIdentifierType) -> Int? { itemIdentifiers.firstIndex(of: identifier) }
    /// The position of a section.
    public func indexOfSection(_ identifier: SectionIdentifierType) -> Int? { sectionOrder.firstIndex(of: identifier) }

    /// Adds sections at the end.
    public mutating func appendSections(_ identifiers: [SectionIdentifierType]) {
        for identifier in identifiers {
            precondition(itemsBySection[identifier] == nil, "Section identifier \(identifier) is already in the snapshot.")
            sectionOrder.append(identifier)
            itemsBySection[identifier] = []
        }
    }

    /// Adds items at the end of a section (the last section when nil).
    public mutating func appendItems(_ identifiers: [ItemIdentifierType], toSection sectionIdentifier: SectionIdentifierType? = nil) {
        guard let section = sectionIdentifier ?? sectionOrder.last else {
            preconditionFailure("appendItems needs a section: append one first.")
        }
        precondition(itemsBySection[section] != nil, "Section identifier \(section) is not in the snapshot.")
        for identifier in identifiers {
            precondition(sectionOfItem[identifier] == nil, "Item identifier \(identifier) is already in the snapshot.")
            sectionOfItem[identifier] = section
        }
        itemsBySection[section]!.append(contentsOf: identifiers)
    }

    /// Inserts items before another item.
    public mutating func insertItems(_ identifiers: [ItemIdentifierType], beforeItem: ItemIdentifierType) {
        insert(identifiers, near: beforeItem, offset: 0)
    }

    /// Inserts items after another item.
    public mutating func insertItems(_ identifiers: [ItemIdentifierType], afterItem: ItemIdentifierType) {
        insert(identifiers, near: afterItem, offset: 1)
    }

    private mutating func insert(_ identifiers: [ItemIdentifierType], near anchor: ItemIdentifierType, offset: Int) {
        guard let section = sectionOfItem[anchor], let index = itemsBySection[section]?.firstIndex(of: anchor) else {
            preconditionFailure("Item identifier \(anchor) is not in the snapshot.")
        }
        for identifier in identifiers { sectionOfItem[identifier] = section }
        itemsBySection[section]!.insert(contentsOf: identifiers, at: index + offset)
    }

    /// Removes items.
    public mutating func deleteItems(_ identifiers: [ItemIdentifierType]) {
        for identifier in identifiers {
            guard let section = sectionOfItem.removeValue(forKey: identifier) else { continue }
            itemsBySection[section]?.removeAll { $0 == identifier }
        }
    }

    /// Removes every section and item.
    public mutating func deleteAllItems() {
        self = NSDiffableDataSourceSnapshot()
    }

    /// Removes sections and their items.
    public mutating func deleteSections(_ identifiers: [SectionIdentifierType]) {
        for identifier in identifiers {
            for item in itemsBySection.removeValue(forKey: identifier) ?? [] { sectionOfItem[item] = nil }
            sectionOrder.removeAll { $0 == identifier }
        }
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
        reloadedItemIdentifiers.append(contentsOf: identifiers.filter { sectionOfItem[$0] != nil })
    }

    /// Marks items to be reconfigured.
    public mutating func reconfigureItems(_ identifiers: [ItemIdentifierType]) {
        reconfiguredItemIdentifiers.append(contentsOf: identifiers.filter { sectionOfItem[$0] != nil })
    }

    /// Marks sections to be reloaded.
    public mutating func reloadSections(_ identifiers: [SectionIdentifierType]) {
        reloadedSectionIdentifiers.append(contentsOf: identifiers.filter { itemsBySection[$0] != nil })
    }
}
