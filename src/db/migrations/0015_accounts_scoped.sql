DROP INDEX `users_email`;--> statement-breakpoint
ALTER TABLE `users` ADD `scope_org_id` text;--> statement-breakpoint
-- Issue 23: no password set so far was proven (links were shown to the inviter). Each account stays in the organization of its oldest membership, whose link set the password.
DELETE FROM `users` WHERE NOT EXISTS (SELECT 1 FROM `memberships` m WHERE m.`user_id` = `users`.`id`);--> statement-breakpoint
UPDATE `users` SET `scope_org_id` = (SELECT m.`org_id` FROM `memberships` m WHERE m.`user_id` = `users`.`id` ORDER BY m.`created_at` ASC, m.`org_id` ASC LIMIT 1);--> statement-breakpoint
-- Its other memberships were joined "at once" on a password set elsewhere: each becomes an account of its own organization, not set up yet (its owner invites again).
INSERT INTO `users` (`id`, `email`, `password_hash`, `created_at`, `scope_org_id`) SELECT 'usr_' || lower(hex(randomblob(12))), u.`email`, NULL, m.`created_at`, m.`org_id` FROM `memberships` m JOIN `users` u ON u.`id` = m.`user_id` WHERE m.`org_id` <> u.`scope_org_id`;--> statement-breakpoint
DELETE FROM `sessions` WHERE `org_id` IS NOT (SELECT u.`scope_org_id` FROM `users` u WHERE u.`id` = `sessions`.`user_id`);--> statement-breakpoint
DELETE FROM `setup_tokens` WHERE `org_id` IS NOT (SELECT u.`scope_org_id` FROM `users` u WHERE u.`id` = `setup_tokens`.`user_id`);--> statement-breakpoint
UPDATE `memberships` SET `user_id` = (SELECT n.`id` FROM `users` n JOIN `users` o ON o.`email` = n.`email` WHERE o.`id` = `memberships`.`user_id` AND n.`scope_org_id` = `memberships`.`org_id`) WHERE `org_id` <> (SELECT u.`scope_org_id` FROM `users` u WHERE u.`id` = `memberships`.`user_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_scope` ON `users` (`email`,`scope_org_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_proven` ON `users` (`email`) WHERE scope_org_id IS NULL;--> statement-breakpoint
ALTER TABLE `setup_tokens` ADD `delivered` integer DEFAULT 0 NOT NULL;
