"""The model of Volcano v1.15.1's scheduler: a session's snapshot (`model`, `resources`, `quota`),
sessions and statements (`session`), the tier walks (`framework`), the plugins (`plugins`, `queues`,
`topology`, `subgroups`), the actions (`actions`, `eviction`), one cycle (`engine`) and sessions from
the project's scenario format (`scenario`). Nothing here knows about stacks or dumps."""
