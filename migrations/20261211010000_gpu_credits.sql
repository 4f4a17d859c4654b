-- Each user tag's own GPU spend per project and day (#53): Cost Explorer grouped by the project
-- and user tags, filtered to the account's GPU usage types. A project no team owns had its
-- GPU spend divided by the users' whole usage, so a GPU credit on one user's tag lowered
-- other teams' GPU spend, and users who ran no GPU were given some. Same shape (and indexes)
-- as costs_by_user.
create table costs_by_user_gpu (like costs_by_user including all);

create trigger costs_by_user_gpu_version after insert or update or delete or truncate on costs_by_user_gpu
    for each statement execute function bump_data_version();
