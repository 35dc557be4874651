//
//  DogListViewModel.swift
//  Kennel
//
//  A fetched results controller and its delegate, as a table view's data source uses them.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

final class DogListViewModel: NSObject, NSFetchedResultsControllerDelegate {

    let context: NSManagedObjectContext
    private(set) var changes: [String] = []
    var onChange: (() -> Void)?

    lazy var fetchedResultsController: NSFetchedResultsController<Dog> = {
        let fetchRequest: NSFetchRequest<Dog> = Dog.fetchRequest()
        fetchRequest.sortDescriptors = [
            NSSortDescriptor(key: "owner.name", ascending: true),
            NSSortDescriptor(key: "weight", ascending: false),
            NSSortDescriptor(key: "name", ascending: true, selector: Selector("localizedStandardCompare:")),
        ]
        fetchRequest.fetchBatchSize = 20
        let controller = NSFetchedResultsController(fetchRequest: fetchRequest,
                                                    managedObjectContext: context,
                                                    sectionNameKeyPath: "owner.name",
                                                    cacheName: nil)
        controller.delegate = self
        return controller
    }()

    init(context: NSManagedObjectContext) {
        self.context = context
        super.init()
    }

    func load() throws {
        try fetchedResultsController.performFetch()
    }

    var numberOfSections: Int {
        return fetchedResultsController.sections?.count ?? 0
    }

    func numberOfRows(inSection section: Int) -> Int {
        guard let sectionInfo = fetchedResultsController.sections?[section] else { return 0 }
        return sectionInfo.numberOfObjects
    }

    func title(at indexPath: IndexPath) -> String {
        let dog = fetchedResultsController.object(at: indexPath)
        return "\(dog.name) (\(dog.weight) kg)"
    }

    // MARK: - NSFetchedResultsControllerDelegate

    func controllerWillChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) {
        changes.append("begin")
    }

    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange sectionInfo: NSFetchedResultsSectionInfo, atSectionIndex sectionIndex: Int, for type: NSFetchedResultsChangeType) {
        switch type {
        case .insert: changes.append("insert section \(sectionIndex)")
        case .delete: changes.append("delete section \(sectionIndex)")
        default: break
        }
    }

    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange anObject: Any, at indexPath: IndexPath?, for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?) {
        switch type {
        case .insert: changes.append("insert \(newIndexPath!.section).\(newIndexPath!.item)")
        case .delete: changes.append("delete \(indexPath!.section).\(indexPath!.item)")
        case .update: changes.append("update \(indexPath!.section).\(indexPath!.item)")
        case .move: changes.append("move \(indexPath!.section).\(indexPath!.item) to \(newIndexPath!.section).\(newIndexPath!.item)")
        @unknown default: break
        }
    }

    func controllerDidChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) {
        changes.append("end")
        onChange?()
    }
}
