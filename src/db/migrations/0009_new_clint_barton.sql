CREATE TABLE `actor_tags` (
	`kind` text NOT NULL,
	`tag` text NOT NULL,
	`org_id` text NOT NULL,
	`actor_id` text NOT NULL,
	PRIMARY KEY(`kind`, `tag`, `org_id`, `actor_id`)
);
--> statement-breakpoint
CREATE INDEX `actor_tags_actor` ON `actor_tags` (`actor_id`);--> statement-breakpoint
CREATE TABLE `work` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`org_id` text NOT NULL,
	`entity_id` text NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`max_attempts` integer NOT NULL,
	`claimed_by` text,
	`lease_until` integer,
	`run_after` integer NOT NULL,
	`last_error` text,
	`dedupe_key` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `work_claim` ON `work` (`type`,`status`,`run_after`);--> statement-breakpoint
CREATE INDEX `work_due` ON `work` (`run_after`) WHERE status = 'queued';--> statement-breakpoint
CREATE INDEX `work_org_claim` ON `work` (`type`,`org_id`,`status`,`run_after`);--> statement-breakpoint
CREATE INDEX `work_entity` ON `work` (`entity_id`,`status`);--> statement-breakpoint
CREATE INDEX `work_finished` ON `work` (`finished_at`) WHERE finished_at IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `work_dedupe` ON `work` (`dedupe_key`) WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running');--> statement-breakpoint
CREATE TABLE `work_turns` (
	`type` text NOT NULL,
	`org_id` text NOT NULL,
	`served_seq` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `work_turns_type_org` ON `work_turns` (`type`,`org_id`);--> statement-breakpoint
CREATE TABLE `broadcasts` (
	`stream_id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`claimed_by` text NOT NULL,
	`lease_until` integer NOT NULL,
	`started_at` integer NOT NULL,
	`left_at` integer
);
--> statement-breakpoint
CREATE INDEX `broadcasts_lease` ON `broadcasts` (`lease_until`);--> statement-breakpoint
ALTER TABLE `actors` ADD `machine_version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
INSERT INTO `work` (`id`, `type`, `org_id`, `entity_id`, `payload`, `status`, `attempts`, `max_attempts`, `claimed_by`, `lease_until`, `run_after`, `last_error`, `created_at`, `updated_at`) SELECT `id`, `type`, `org_id`, `entity_id`, `payload`, `status`, `attempts`, `max_attempts`, `claimed_by`, `lease_until`, `run_after`, `last_error`, `created_at`, `updated_at` FROM `jobs` WHERE `status` IN ('queued', 'running');--> statement-breakpoint
INSERT INTO `work_turns` (`type`, `org_id`, `served_seq`) SELECT `type`, `org_id`, `served_seq` FROM `job_turns`;--> statement-breakpoint
INSERT INTO `actor_tags` (`kind`, `tag`, `org_id`, `actor_id`) SELECT `kind`, 'holdsSlot', `org_id`, `id` FROM `actors` WHERE `kind` = 'livestream' AND `status` IN ('READY_TO_STREAM', 'LIVE') AND `deleted_at` IS NULL;--> statement-breakpoint
INSERT INTO `actor_tags` (`kind`, `tag`, `org_id`, `actor_id`) SELECT `kind`, 'acceptsPublish', `org_id`, `id` FROM `actors` WHERE `kind` = 'livestream' AND `status` IN ('READY_TO_STREAM', 'LIVE') AND `deleted_at` IS NULL;--> statement-breakpoint
INSERT INTO `actor_tags` (`kind`, `tag`, `org_id`, `actor_id`) SELECT `kind`, 'onAir', `org_id`, `id` FROM `actors` WHERE `kind` = 'livestream' AND `status` = 'LIVE' AND `deleted_at` IS NULL;--> statement-breakpoint
INSERT INTO `actor_tags` (`kind`, `tag`, `org_id`, `actor_id`) SELECT `kind`, 'booked', `org_id`, `id` FROM `actors` WHERE `kind` = 'livestream' AND `status` = 'SCHEDULED' AND `deleted_at` IS NULL;--> statement-breakpoint
INSERT INTO `actor_tags` (`kind`, `tag`, `org_id`, `actor_id`) SELECT `kind`, 'settled', `org_id`, `id` FROM `actors` WHERE `status` IN ('ENDED', 'ERROR', 'COMPLETED') AND `deleted_at` IS NULL;--> statement-breakpoint
INSERT INTO `actor_tags` (`kind`, `tag`, `org_id`, `actor_id`) SELECT `kind`, 'transcoding', `org_id`, `id` FROM `actors` WHERE `kind` = 'video' AND `status` = 'TRANSCODING' AND `deleted_at` IS NULL;
