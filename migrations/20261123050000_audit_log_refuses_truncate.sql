-- The account audit log refuses TRUNCATE too, as enforcement_audit does: a row trigger
-- never sees a TRUNCATE, so a statement trigger guards it.
create trigger audit_log_no_truncate before truncate on audit_log
    for each statement execute function audit_log_is_append_only();
