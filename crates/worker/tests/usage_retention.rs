//! Usage counts (F45) are pruned by the worker's daily retention run, on both engines: the
//! last `usage_retention_days` days are kept, older days deleted, also when items are kept
//! forever.

use tidings_testkit::on_both_engines;

use tidings_store::{UsageKind, unix_now, usage_day};
use tidings_worker::{WorkerConfig, run_retention};

on_both_engines!(retention_deletes_usage_counts_older_than_their_days, |db| {
    let store = db.migrated().await;
    let now = unix_now();
    let today = usage_day(now);
    for age in [400, 31, 30, 29, 0] {
        for kind in [UsageKind::Click, UsageKind::TagView, UsageKind::Search] {
            store.count_usage(today - age, kind, "7").await.unwrap();
        }
    }
    let config = WorkerConfig {
        // Items are kept forever; usage counts still go after their own retention.
        retention_days: 0,
        usage_retention_days: 30,
        ..WorkerConfig::default()
    };
    let report = run_retention(&store, now, &config).await.unwrap();
    // Kept: today and the 29 days before it. Deleted: 30, 31 and 400 days ago, three kinds each.
    assert_eq!(report.usage_counts_deleted, 9);
    assert_eq!(report.items_deleted, 0);
    let kept = store
        .top_usage(UsageKind::Search, today - 1000, today, 10)
        .await
        .unwrap();
    assert_eq!(kept[0].count, 2, "{kept:?}");
    assert!(
        store
            .top_usage(UsageKind::Click, today - 1000, today - 30, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The default keeps 90 days.
    assert_eq!(WorkerConfig::default().usage_retention_days, 90);
    let report = run_retention(&store, now, &WorkerConfig::default())
        .await
        .unwrap();
    assert_eq!(report.usage_counts_deleted, 0);
});
