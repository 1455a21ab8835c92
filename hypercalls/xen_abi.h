// The one way into the Xen public headers (Debian libxen-dev). They expect
// the C integer types in the global namespace before they are included.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <xen/xen.h>
#include <xen/arch-x86/hvm/start_info.h>
#include <xen/callback.h>
#include <xen/event_channel.h>
#include <xen/features.h>
#include <xen/io/console.h>
#include <xen/sched.h>
#include <xen/vcpu.h>
#include <xen/version.h>
