SELECT snapshot_id, parent_id, made_current_at FROM system.iceberg_history
    WHERE `table` = 'events' AND is_current_ancestor = 1
    ORDER BY made_current_at DESC LIMIT 10 FORMAT PrettyCompact;
