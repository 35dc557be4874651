// ReliabilityWorker: the other process of the reliability tests.
//
//   ReliabilityWorker save-loop <store.sqlite> <first number>
//       saves batches forever, one per save: a Batch with that number and three Items; prints
//       "saved <number>" after each save returns. The test kills it at random moments.
//   ReliabilityWorker concurrent <store.sqlite> <seconds> <contexts> <tag> [objectTrump|storeTrump|overwrite|rollback]
//       several background contexts insert batches as fast as they can for a while, and every
//       fourth save also renames the shared batch (number -1), so saves conflict; conflicts are
//       resolved by a counting subclass of the merge policy (object trump by default). Prints
//       "saved <count> errors <count> conflicts <count>" at the end.
//
//   A store given as a postgres:// URL is a PostgreSQL store; otherwise a SQLite file.
//   ReliabilityWorker read-only-directory <store> sqlite|binary
//   ReliabilityWorker full-disk <store> sqlite|binary once|retry
//       the hostile-environment tests' cases (HostileEnvironment.swift).
//   ReliabilityWorker off-queue-fetch [-com.apple.CoreData.ConcurrencyDebug 1]
//       fetches with a private-queue context outside its perform blocks, then prints "no trap":
//       with concurrency debugging on (the launch argument, or the environment variable) it traps.
import Foundation
import OpenCoreData
import OpenCoreDataPostgreSQL
import OpenCoreDataTestKit

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ReliabilityWorker: \(message)\n".utf8))
    exit(1)
}

/// Prints a line at once (the parent reads it while this process may be killed any moment).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
if arguments.count >= 2, arguments[1] == "off-queue-fetch" {
    let coordinator = NSPersistentStoreCoordinator(managedObjectModel: BatchModel.make())
    _ = try? coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil, options: nil)
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = coordinator
    _ = try? context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Batch"))
    say("no trap")
    exit(0)
}
if arguments.count >= 4, let mode = HostileEnvironment(arguments: Array(arguments.dropFirst())) {
    mode.run()
    exit(0)
}
guard arguments.count >= 4 else { fail("usage: ReliabilityWorker save-loop|concurrent <store> …") }
let coordinator = NSPersistentStoreCoordinator(managedObjectModel: BatchModel.make())
do {
    if arguments[2].hasPrefix("postgres://"), let url = URL(string: arguments[2]) {
        try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: url, options: nil)
    } else {
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: URL(fileURLWithPath: arguments[2]), options: nil)
    }
} catch {
    fail("opening: \(error)")
}

switch arguments[1] {
case "save-loop":
    guard var number = Int64(arguments[3]) else { fail("bad first number") }
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = coordinator
    context.performAndWait {
        while true {
            BatchModel.insertBatch(number, tag: "loop", into: context)
            do {
                try context.save()
            } catch {
                fail("save \(number): \(error)")
            }
            say("saved \(number)")
            context.reset()
            number += 1
        }
    }
case "concurrent":
    guard arguments.count >= 6, let seconds = Double(arguments[3]), let contexts = Int(arguments[4]) else { fail("usage: concurrent <store> <seconds> <contexts> <tag>") }
    let tag = arguments[5]
    let deadline = Date().addingTimeInterval(seconds)
    let policyTypes: [String: NSMergePolicyType] = ["objectTrump": .mergeByPropertyObjectTrumpMergePolicyType, "storeTrump": .mergeByPropertyStoreTrumpMergePolicyType,
                                                    "overwrite": .overwriteMergePolicyType, "rollback": .rollbackMergePolicyType]
    guard let policyType = policyTypes[arguments.count >= 7 ? arguments[6] : "objectTrump"] else { fail("unknown merge policy \(arguments[6])") }
    let policy = CountingMergePolicy(policyType)
    let group = DispatchGroup()
    let totals = NSLock()
    nonisolated(unsafe) var saved = 0
    nonisolated(unsafe) var errors: [String] = []
    for worker in 0..<contexts {
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        context.mergePolicy = policy
        group.enter()
        DispatchQueue.global().async {
            var count = 0
            var failures: [String] = []
            context.performAndWait {
                var number = Int64(worker) << 32
                let shared = NSFetchRequest<NSManagedObject>(entityName: "Batch")
                shared.predicate = NSPredicate(format: "number == -1")
                while Date() < deadline {
                    BatchModel.insertBatch(number, tag: tag, into: context)
                    if number % 4 == 0, let batch = try? context.fetch(shared).first {
                        batch.setValue("\(tag)-\(worker)-\(number)", forKey: "tag")
                    }
                    do {
                        try context.save()
                        count += 1
                    } catch {
                        failures.append("\(error)")
                        context.rollback()
                    }
                    context.reset()
                    number += 1
                }
            }
            totals.lock()
            saved += count
            errors += failures
            totals.unlock()
            group.leave()
        }
    }
    group.wait()
    say("saved \(saved) errors \(errors.count) conflicts \(policy.resolved)")
    for error in errors.prefix(3) { FileHandle.standardError.write(Data("error: \(error)\n".utf8)) }
default:
    fail("unknown mode \(arguments[1])")
}
