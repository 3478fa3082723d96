/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_state_parse(): the state file read at start after a crash (any
 * damage: truncation, garbage, other versions). Whatever it returns must
 * write back to a file that reads back undamaged and unchanged. */
#include "fuzz.h"
#include "np-state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autoptr(NpState) s = NULL, again = NULL;
        g_autofree char *text = NULL, *text2 = NULL;
        NpStateReport rep;
        size_t len = 0, len2 = 0;

        fuzz_setup();
        s = np_state_parse("/run/numaplaced/state", (const char *) data, size, &rep);
        FUZZ_ASSERT(s != NULL);
        text = np_state_to_data(s, &len);
        again = np_state_parse("/run/numaplaced/state", text, len, &rep);
        FUZZ_ASSERT(!np_state_report_damaged(&rep));
        FUZZ_ASSERT(np_state_count(again) == np_state_count(s));
        text2 = np_state_to_data(again, &len2);
        FUZZ_ASSERT(len == len2 && memcmp(text, text2, len) == 0);
        {
                g_autofree char *why = np_state_report_describe(&rep);
                FUZZ_ASSERT(why && !*why);
        }
        return 0;
}
