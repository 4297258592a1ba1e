#include <iostream>
#include <string>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int t;
    std::cin >> t;
    std::string s, out;
    for (int k = 0; k < t; ++k) {
        std::cin >> s;
        std::string stack;
        bool ok = true;
        for (char c : s) {
            if (c == '(' || c == '[' || c == '{') {
                stack.push_back(c);
                continue;
            }
            char want = c == ')' ? '(' : c == ']' ? '[' : '{';
            if (stack.empty() || stack.back() != want) {
                ok = false;
                break;
            }
            stack.pop_back();
        }
        out += (ok && stack.empty()) ? "YES\n" : "NO\n";
    }
    std::cout << out;
    return 0;
}
