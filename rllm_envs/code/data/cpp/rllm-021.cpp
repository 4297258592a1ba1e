#include <iostream>
#include <string>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, q;
    std::cin >> n >> q;
    std::vector<long long> pre(n + 1, 0);
    for (int i = 1; i <= n; ++i) {
        long long x;
        std::cin >> x;
        pre[i] = pre[i - 1] + x;
    }
    std::string out;
    for (int k = 0; k < q; ++k) {
        int l, r;
        std::cin >> l >> r;
        out += std::to_string(pre[r] - pre[l - 1]);
        out += '\n';
    }
    std::cout << out;
    return 0;
}
