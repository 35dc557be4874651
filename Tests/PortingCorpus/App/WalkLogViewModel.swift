//
//  WalkLogViewModel.swift
//  Kennel
//
//  A dog's walks for a diffable data source: the fetched results controller hands over a
//  snapshot reference, bridged to the typed snapshot a data source applies.
//

import Foundation
#if canImport(UIKit)
import UIKit
#endif
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

final class WalkLogViewModel: NSObject, NSFetchedResultsControllerDelegate {

    let context: NSManagedObjectContext
    let dog: Dog
    /// What `dataSource.apply(_:animatingDifferences:)` would receive.
    private(set) var appliedSnapshots: [NSDiffableDataSourceSnapshot<String, NSManagedObjectID>] = []
    var onApply: (() -> Void)?

    private lazy var fetchedResultsController: NSFetchedResultsController<Walk> = {
        let fetchRequest: NSFetchRequest<Walk> = Walk.fetchRequest()
        fetchRequest.predicate = NSPredicate(format: "dog == %@", dog)
        fetchRequest.sortDescriptors = [NSSortDescriptor(key: "date", ascending: false)]
        let controller = NSFetchedResultsController(fetchRequest: fetchRequest,
                                                    managedObjectContext: context,
                                                    sectionNameKeyPath: nil,
                                                    cacheName: nil)
        controller.delegate = self
        return controller
    }()

    init(dog: Dog, context: NSManagedObjectContext) {
        self.dog = dog
        self.context = context
        super.init()
    }

    func load() throws {
        try fetchedResultsController.performFetch()
    }

    // MARK: - NSFetchedResultsControllerDelegate

    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChangeContentWith snapshot: NSDiffableDataSourceSnapshotReference) {
        let snapshot = snapshot as NSDiffableDataSourceSnapshot<String, NSManagedObjectID>
        appliedSnapshots.append(snapshot)
        onApply?()
    }
}
