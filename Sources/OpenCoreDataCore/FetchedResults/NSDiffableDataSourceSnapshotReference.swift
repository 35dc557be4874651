import Foundation

/// The untyped, reference form of `NSDiffableDataSourceSnapshot` (UIKit's and AppKit's class,
/// which Linux lacks), as a fetched results controller hands it to a delegate that implements
/// `controller(_:didChangeContentWith:)` with this type. Bridge it to the typed snapshot as on
/// Apple's platforms: `snapshot as NSDiffableDataSourceSnapshot<String, NSManagedObjectID>`.
///
/// Invariant: immutable; it wraps one typed snapshot, whose untyped identifiers are gathered once,
/// when first read.
/// Unchecked Sendable: the wrapped snapshot is Sendable and the gathered identifiers are written
/// once, under a lock.
public final class NSDiffableDataSourceSnapshotReference: NSObject, @unchecked Sendable {
    /// The typed snapshot wrapped, as given.
    let base: any Sendable
    /// Gathers the untyped identifiers from `base`.
    private let gather: @Sendable () -> UntypedContents
    /// The untyped identifiers, once gathered.
    private let gathered = LockedValue<UntypedContents?>(nil)

    /// Sections, items by section and in order, and the marked identifiers, without their types.
    struct UntypedContents {
        var sections: [AnyHashable] = []
        var itemsBySection: [AnyHashable: [AnyHashable]] = [:]
        var items: [AnyHashable] = []
        var reloadedItems: [AnyHashable] = []
        var reconfiguredItems: [AnyHashable] = []
        var reloadedSections: [AnyHashable] = []
    }

    /// An empty snapshot.
    public override convenience init() {
        self.init(NSDiffableDataSourceSnapshot<String, NSManagedObjectID>())
    }

    /// Wraps a typed snapshot.
    public init<Section, Item>(_ snapshot: NSDiffableDataSourceSnapshot<Section, Item>) {
        base = snapshot
        gather = {
            var contents = UntypedContents()
            contents.sections = snapshot.sectionIdentifiers.map(AnyHashable.init)
            for section in snapshot.sectionIdentifiers {
                let items = snapshot.itemIdentifiers(inSection: section).map(AnyHashable.init)
                contents.itemsBySection[AnyHashable(section)] = items
                contents.items += items
            }
            contents.reloadedItems = snapshot.reloadedItemIdentifiers.map(AnyHashable.init)
            contents.reconfiguredItems = snapshot.reconfiguredItemIdentifiers.map(AnyHashable.init)
            contents.reloadedSections = snapshot.reloadedSectionIdentifiers.map(AnyHashable.init)
            return contents
        }
    }

    private var contents: UntypedContents {
        gathered.withLock { gathered in
            if let gathered { return gathered }
            let contents = gather()
            gathered = contents
            return contents
        }
    }

    /// The number of items in all sections.
    public var numberOfItems: Int { contents.items.count }
    /// The number of sections.
    public var numberOfSections: Int { contents.sections.count }
    /// The section identifiers, in order.
    public var sectionIdentifiers: [Any] { contents.sections.map(\.base) }
    /// The item identifiers of every section, in order.
    public var itemIdentifiers: [Any] { contents.items.map(\.base) }
    /// Items marked for reloading.
    public var reloadedItemIdentifiers: [Any] { contents.reloadedItems.map(\.base) }
    /// Items marked for reconfiguring.
    public var reconfiguredItemIdentifiers: [Any] { contents.reconfiguredItems.map(\.base) }
    /// Sections marked for reloading.
    public var reloadedSectionIdentifiers: [Any] { contents.reloadedSections.map(\.base) }

    /// The number of items in a section (0 for an unknown section).
    public func numberOfItemsInSection(withIdentifier sectionIdentifier: Any) -> Int {
        itemIdentifiersInSection(withIdentifier: sectionIdentifier).count
    }
    /// The items of a section, in order (none for an unknown section).
    public func itemIdentifiersInSection(withIdentifier sectionIdentifier: Any) -> [Any] {
        guard let key = sectionIdentifier as? AnyHashable else { return [] }
        return (contents.itemsBySection[key] ?? []).map(\.base)
    }
    /// The section holding an item, nil when no section does.
    public func sectionIdentifierForSection(containingItemIdentifier itemIdentifier: Any) -> Any? {
        guard let key = itemIdentifier as? AnyHashable else { return nil }
        let contents = contents
        return contents.sections.first { contents.itemsBySection[$0]?.contains(key) == true }?.base
    }
    /// The position of an item among all items, `NSNotFound` when absent.
    public func index(ofItemIdentifier itemIdentifier: Any) -> Int {
        guard let key = itemIdentifier as? AnyHashable else { return NSNotFound }
        return contents.items.firstIndex(of: key) ?? NSNotFound
    }
    /// The position of a section, `NSNotFound` when absent.
    public func index(ofSectionIdentifier sectionIdentifier: Any) -> Int {
        guard let key = sectionIdentifier as? AnyHashable else { return NSNotFound }
        return contents.sections.firstIndex(of: key) ?? NSNotFound
    }

    /// The snapshot with typed identifiers: the wrapped one when its types are those, else nil.
    func typed<Section, Item>(as _: NSDiffableDataSourceSnapshot<Section, Item>.Type) -> NSDiffableDataSourceSnapshot<Section, Item>? {
        base as? NSDiffableDataSourceSnapshot<Section, Item>
    }
}

/// `snapshot as NSDiffableDataSourceSnapshot<String, NSManagedObjectID>`, as on Apple's platforms.
extension NSDiffableDataSourceSnapshot: _ObjectiveCBridgeable {
    public func _bridgeToObjectiveC() -> NSDiffableDataSourceSnapshotReference {
        NSDiffableDataSourceSnapshotReference(self)
    }

    public static func _forceBridgeFromObjectiveC(_ source: NSDiffableDataSourceSnapshotReference, result: inout Self?) {
        guard let typed = source.typed(as: Self.self) else {
            coreDataMisuse("The snapshot's identifiers are not \(SectionIdentifierType.self) and \(ItemIdentifierType.self).")
        }
        result = typed
    }

    public static func _conditionallyBridgeFromObjectiveC(_ source: NSDiffableDataSourceSnapshotReference, result: inout Self?) -> Bool {
        result = source.typed(as: Self.self)
        return result != nil
    }

    public static func _unconditionallyBridgeFromObjectiveC(_ source: NSDiffableDataSourceSnapshotReference?) -> Self {
        guard let source else { return Self() }
        var result: Self?
        _forceBridgeFromObjectiveC(source, result: &result)
        return result!
    }
}
