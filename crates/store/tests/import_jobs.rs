//! Import jobs (issue 32): started under a per-user limit, updated as they go, finished with
//! their report, seen only by their user, and marked interrupted once their heartbeat stops.

use tidings_store::{
    IMPORT_JOB_STALE_SECONDS, ImportJobEnd, ImportJobProgress, ImportJobStatus, NewImportJob,
    StoreError, unix_now,
};
use tidings_testkit::{add_user, on_both_engines};

fn opml(source: &str) -> NewImportJob<'_> {
    NewImportJob {
        kind: "opml",
        source: Some(source),
        total: 3,
        owner: "test",
    }
}

on_both_engines!(jobs_run_report_and_belong_to_their_user, |db| {
    let store = db.migrated().await;
    let ann = add_user(&store, "ann").await;
    let bob = add_user(&store, "bob").await;
    let job = store
        .start_import_job(ann, &opml("a.opml"), 2)
        .await
        .unwrap();
    assert_eq!(job.status, ImportJobStatus::Running);
    assert_eq!((job.kind.as_str(), job.progress.total), ("opml", 3));
    assert_eq!(job.source.as_deref(), Some("a.opml"));
    // Another user's job is nobody else's business.
    assert_eq!(store.import_job(bob, job.id).await.unwrap(), None);
    let progress = ImportJobProgress {
        total: 3,
        checked: 2,
        added: 1,
        skipped: 0,
        failed: 1,
    };
    assert!(
        store
            .update_import_job(job.id, &progress, None)
            .await
            .unwrap()
    );
    let seen = store.import_job(ann, job.id).await.unwrap().unwrap();
    assert_eq!(seen.progress, progress);
    assert_eq!(seen.entries, "[]");
    let done = ImportJobProgress {
        checked: 3,
        added: 2,
        ..progress
    };
    store
        .finish_import_job(
            job.id,
            &ImportJobEnd {
                status: ImportJobStatus::Done,
                progress: done,
                entries: r#"[{"url":"https://a.example/feed"}]"#,
                summary: Some(r#"{"refused":0}"#),
                error: None,
            },
        )
        .await
        .unwrap();
    let seen = store.import_job(ann, job.id).await.unwrap().unwrap();
    assert_eq!(seen.status, ImportJobStatus::Done);
    assert_eq!(seen.progress, done);
    assert!(seen.entries.contains("a.example"));
    assert_eq!(seen.summary.as_deref(), Some(r#"{"refused":0}"#));
    assert!(seen.finished_at.is_some());
    // A finished job takes no more progress.
    assert!(
        !store
            .update_import_job(job.id, &progress, None)
            .await
            .unwrap()
    );
    let other = store
        .start_import_job(
            ann,
            &NewImportJob {
                kind: "greader",
                ..opml("https://reader.example/")
            },
            2,
        )
        .await
        .unwrap();
    let listed = store.list_import_jobs(ann, None).await.unwrap();
    assert_eq!(
        listed.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![other.id, job.id]
    );
    assert_eq!(listed[1].entries, "[]", "the list leaves the reports out");
    let opml_only = store.list_import_jobs(ann, Some("opml")).await.unwrap();
    assert_eq!(opml_only.len(), 1);
    assert!(store.list_import_jobs(bob, None).await.unwrap().is_empty());
});

on_both_engines!(running_jobs_per_user_are_limited, |db| {
    let store = db.migrated().await;
    let ann = add_user(&store, "ann").await;
    let bob = add_user(&store, "bob").await;
    let first = store.start_import_job(ann, &opml("1"), 2).await.unwrap();
    store.start_import_job(ann, &opml("2"), 2).await.unwrap();
    let third = store.start_import_job(ann, &opml("3"), 2).await;
    assert!(
        matches!(
            third,
            Err(StoreError::LimitReached {
                what: "running imports",
                limit: 2
            })
        ),
        "{third:?}"
    );
    // Other users have limits of their own, and a finished job frees its place.
    store.start_import_job(bob, &opml("b"), 2).await.unwrap();
    store
        .finish_import_job(
            first.id,
            &ImportJobEnd {
                status: ImportJobStatus::Failed,
                progress: ImportJobProgress::default(),
                entries: "[]",
                summary: None,
                error: Some("the database went away"),
            },
        )
        .await
        .unwrap();
    store.start_import_job(ann, &opml("3"), 2).await.unwrap();
    let failed = store.import_job(ann, first.id).await.unwrap().unwrap();
    assert_eq!(failed.status, ImportJobStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("the database went away"));
});

on_both_engines!(jobs_whose_heartbeat_stopped_are_interrupted, |db| {
    let store = db.migrated().await;
    let ann = add_user(&store, "ann").await;
    let stopped = store.start_import_job(ann, &opml("old"), 1).await.unwrap();
    // Its process went away a while ago: no heartbeat since.
    let long_ago = unix_now() - IMPORT_JOB_STALE_SECONDS - 5;
    store
        .execute_raw(&format!(
            "UPDATE import_jobs SET updated_at = {long_ago} WHERE id = {}",
            stopped.id
        ))
        .await
        .unwrap();
    // It no longer counts against the limit, and reading it says what became of it.
    let running = store.start_import_job(ann, &opml("new"), 1).await.unwrap();
    let seen = store.import_job(ann, stopped.id).await.unwrap().unwrap();
    assert_eq!(seen.status, ImportJobStatus::Interrupted);
    assert!(seen.finished_at.is_some());
    assert_eq!(store.interrupt_stale_import_jobs(None).await.unwrap(), 0);
    let seen = store.import_job(ann, running.id).await.unwrap().unwrap();
    assert_eq!(seen.status, ImportJobStatus::Running);
    // Start-up marks every stale job at once.
    store
        .execute_raw(&format!(
            "UPDATE import_jobs SET updated_at = {long_ago} WHERE id = {}",
            running.id
        ))
        .await
        .unwrap();
    assert_eq!(store.interrupt_stale_import_jobs(None).await.unwrap(), 1);
});

on_both_engines!(the_opml_history_becomes_finished_jobs, |db| {
    let store = db.open().await;
    store.migrate_to(36).await.unwrap();
    store
        .execute_raw(
            "INSERT INTO users (id, username, username_key, password_hash, is_admin, created_at,
                                updated_at)
             VALUES (7, 'Ann', 'ann', 'h', FALSE, 0, 0);
             INSERT INTO opml_imports (id, user_id, created_at, file_name, outlines, added,
                                       skipped, failed, report)
             VALUES (41, 7, 100, 'feeds.opml', 3, 1, 1, 1, '[{\"url\":\"https://a.example/\"}]')",
        )
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let job = store.import_job(7, 41).await.unwrap().unwrap();
    assert_eq!(job.kind, "opml");
    assert_eq!(job.status, ImportJobStatus::Done);
    assert_eq!(job.source.as_deref(), Some("feeds.opml"));
    assert_eq!((job.progress.total, job.progress.added), (3, 1));
    assert!(job.entries.contains("a.example"));
    // New jobs get ids past the history's.
    let next = store.start_import_job(7, &opml("next"), 1).await.unwrap();
    assert!(next.id > 41, "{}", next.id);
});
