namespace sandbox::actors {}
